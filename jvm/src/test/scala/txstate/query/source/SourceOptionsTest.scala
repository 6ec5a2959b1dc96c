package txstate.query.source

import java.util.UUID

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import txstate.query.ChangedSince

/** The options of `spark.read.format("txstate")`, checked once: each bad one is an error naming it. */
final class SourceOptionsTest extends AnyFunSuite {
  private def parse(options: (String, String)*): SourceOptions = SourceOptions.parse(options.toMap.asJava)

  private def refused(options: (String, String)*): String =
    intercept[IllegalArgumentException](parse(options: _*)).getMessage

  test("a checkpoint path alone reads operator 0's default store, from checkpoint files when no query holds it") {
    assert(parse("path" -> "/ck") == SourceOptions(SourceTarget.Checkpoint("/ck"), "0", "default", minBatchId = None,
      checkpointReads = true, requireActive = false, waitMs = 0, timestamps = false, changedSince = None, protocol = None))
  }

  test("every option is read, whatever the case of its name, with values trimmed") {
    val id = UUID.randomUUID()
    val o = parse("QUERYID" -> s" $id ", "operator" -> "dedupe", "Store" -> "left-keyToNumValues", "minbatchid" -> "4",
      "checkpointReads" -> "FALSE", "requireActive" -> "true", "waitMs" -> "2500", "timestamps" -> "True",
      "changedSinceMs" -> "1700000000000")
    assert(o == SourceOptions(SourceTarget.QueryId(id), "dedupe", "left-keyToNumValues", Some(4L), checkpointReads = false,
      requireActive = true, waitMs = 2500, timestamps = true, Some(ChangedSince.TimeMs(1700000000000L)), None))
    assert(parse("queryName" -> "counts").target == SourceTarget.QueryName("counts"))
    assert(parse("follower" -> "f-1").target == SourceTarget.Follower("f-1"))
    assert(parse("path" -> "/ck", "changedSinceBatch" -> "0").changedSince.contains(ChangedSince.Batch(0)))
  }

  test("an unknown option is refused with the list of options there are") {
    val message = refused("path" -> "/ck", "operatorId" -> "0")
    assert(message.startsWith("[TXSTATE_SOURCE_UNKNOWN_OPTION] the txstate data source has no option 'operatorid'; " +
      "its options are: path, queryName, queryId, follower, operator, store, minBatchId,"))
  }

  test("a bad value names the option, the value and what it must be") {
    Seq(
      Seq("checkpointReads" -> "yes") -> "option 'checkpointReads' must be true or false, got 'yes'",
      Seq("minBatchId" -> "-1") -> "option 'minBatchId' must be a whole number >= 0, got '-1'",
      Seq("waitMs" -> "1.5") -> "option 'waitMs' must be a whole number >= 0, got '1.5'",
      Seq("changedSinceBatch" -> "latest") -> "option 'changedSinceBatch' must be a whole number >= 0, got 'latest'",
      Seq("changedSinceBatch" -> "3", "changedSinceMs" -> "5") ->
        "option 'changedSinceMs' must be left out when 'changedSinceBatch' is given",
      Seq("protocol" -> "drop") -> ("option 'protocol' must be describe or execute or target or follow or " +
        "followerStatus or unfollow, got 'drop'"),
      Seq("protocol" -> "execute") -> "option 'request' must be the protocol's JSON request, got ''"
    ).foreach { case (options, problem) =>
      val message = refused(("path" -> "/ck") +: options: _*)
      assert(message.startsWith(s"[TXSTATE_SOURCE_BAD_OPTION] $problem"), message)
    }
    val notAnId = refused("queryId" -> "counts")
    assert(notAnId == "[TXSTATE_SOURCE_BAD_OPTION] option 'queryId' must be a query id (a UUID, StreamingQuery.id), " +
      "got 'counts'")
  }

  test("a read names exactly one target; a blank one is no target") {
    assert(refused().startsWith("[TXSTATE_SOURCE_NO_TARGET] say which state to read: option 'path'"))
    assert(refused("path" -> "  ").startsWith("[TXSTATE_SOURCE_NO_TARGET] say which state to read"))
    assert(refused("path" -> "/ck", "queryName" -> "counts") ==
      "[TXSTATE_SOURCE_NO_TARGET] options path, queryName each name the state to read: pass one")
  }

  test("the query protocol needs no target: its request names the store") {
    val o = parse("protocol" -> "describe", "request" -> """{"checkpoint": "/ck"}""")
    assert(o.protocol.contains("describe" -> """{"checkpoint": "/ck"}""") && o.target == SourceTarget.Checkpoint(""))
  }
}
