package txstate.query.follow

import java.io.File

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

import txstate.query.AnswerJson
import txstate.spark.{CheckpointFixture, KeyPlacement}

/**
 * Followers of a real Spark run's checkpoint (txstate state, two partitions), whose leader the
 * tests continue with txstate providers and Spark's logs: what a follower answers and when, and
 * the registry that finds followers by id (Followers).
 */
final class FollowersTest extends AnyFunSuite with CheckpointFixture {
  import CheckpointFixture._

  private val mapper = new ObjectMapper()
  private val placement = new KeyPlacement(aggKeySchema, 1, 2)
  private val aggKey = new RowMaker(aggKeySchema)
  private val aggValue = new RowMaker(aggValueSchema)
  private def ownerOf(k: String): Int = placement.partitionOf(aggKey(k))

  /** Polls only when a test says so: every change a test sees is one it asked for. */
  private def followOptions(localDir: File = newTempDir("replicas"), partitions: Option[Seq[Int]] = None) =
    FollowOptions(partitions, pollIntervalMs = 600000L, localDir = localDir.getAbsolutePath)

  private def following[T](ck: TestCheckpoint, options: FollowOptions = followOptions(), requestId: Option[String] = None,
      operator: String = "stateStoreSave")(use: Follower => T): T = {
    val follower = Followers.follow(ck.root, operator, "default", hadoopConf, options, requestId)
    try use(follower) finally Followers.close(follower.id)
  }

  /** The leader runs batch `batchId`: every partition commits its next version (with `changes` where they belong). */
  private def leaderRuns(ck: TestCheckpoint, batchId: Long, changes: Map[String, (Long, Long)], logged: Boolean = true)
      : Unit = {
    Seq(0, 1).foreach { p =>
      val rows = changes.toSeq.filter(c => ownerOf(c._1) == p).map { case (k, (n, sum)) => aggKey(k) -> aggValue(n, sum) }
      commitState(ck, p, aggKeySchema, aggValueSchema, batchId + 1)(rows)
    }
    if (logged) logBatch(ck, batchId)
  }

  private def execute(f: Follower, request: String): JsonNode = mapper.readTree(FollowerCalls.execute(f, request, hadoopConf))
  private def results(answer: JsonNode): Seq[JsonNode] = answer.get("partitions").elements().asScala.toSeq
  private def scan(f: Follower): JsonNode = execute(f, """{"query": {"type": "scan"}}""")

  private def rowsOf(answer: JsonNode): Map[Seq[Any], Seq[Any]] =
    results(answer).filter(_.get("success").asBoolean).flatMap(_.get("result").get("rows").elements().asScala).map { r =>
      Seq[Any](r.get("key").get(0).asText) -> Seq[Any](r.get("value").get(0).asLong, r.get("value").get(1).asLong)
    }.toMap

  private def failures(answer: JsonNode): Map[Int, String] =
    results(answer).filterNot(_.get("success").asBoolean).map(r => r.get("partition").asInt -> r.get("failureReason").asText).toMap

  test("a follower answers the leader's last committed batch, and a newer one only once Spark's commit log has it") {
    val ck = sparkRunCheckpoint("agg")
    following(ck) { f =>
      val first = scan(f)
      assert(rowsOf(first) == aggState && first.get("position").get("batchId").asLong == 2)
      // Batch 3 is written to every partition's store but not yet to the commit log: not published.
      leaderRuns(ck, 3, Map("key00" -> ((100L, 1000L)), "key99" -> ((1L, 5L))), logged = false)
      f.poll()
      assert(rowsOf(scan(f)) == aggState)
      val before = f.status
      logBatch(ck, 3)
      f.poll()
      val next = scan(f)
      assert(rowsOf(next) == aggState ++ Map(Seq("key00") -> Seq(100L, 1000L), Seq("key99") -> Seq(1L, 5L)))
      assert(next.get("position").get("batchId").asLong == 3)
      val status = f.status
      assert(status.lag == FollowerLag(Some(3), Some(3), 0, 0) && status.failures == 0)
      assert(status.catchUps == before.catchUps + 2 && status.reanchors == 0, "each partition replays one changelog")
      // A key lookup asks only the partition that owns the key.
      val lookup = execute(f, """{"query": {"type": "key", "key": ["key00"]}}""")
      assert(results(lookup).map(_.get("partition").asInt) == Seq(ownerOf("key00")))
      assert(results(lookup).head.get("result").toString == "[100,1000]")
    }
  }

  test("a partition it does not follow answers NOT_PRESENT, one the store does not have DOES_NOT_EXIST") {
    val ck = sparkRunCheckpoint("agg")
    following(ck, followOptions(partitions = Some(Seq(1)))) { f =>
      assert(f.partitions == Seq(1) && f.follows(1) && !f.follows(0))
      val answer = execute(f, """{"query": {"type": "scan"}, "partitions": [0, 1, 5]}""")
      assert(failures(answer) == Map(0 -> "NOT_PRESENT", 5 -> "DOES_NOT_EXIST"))
      assert(rowsOf(answer) == aggState.filter(e => ownerOf(e._1.head.toString) == 1))
      val owned = aggState.keys.map(_.head.toString).find(ownerOf(_) == 0).get
      assert(failures(execute(f, s"""{"query": {"type": "key", "key": ["$owned"]}}""")) == Map(0 -> "NOT_PRESENT"))
    }
  }

  test("a follower of a leader without a committed batch holds nothing, then catches up at the first commit") {
    val ck = newCheckpoint()
    writeOperatorMetadata(ck, 0, "stateStoreSave", 2)
    leaderRuns(ck, 0, Map("a" -> ((1L, 2L)), "b" -> ((3L, 4L))), logged = false)
    // By id: Spark 3.5 writes no operator metadata, so its operators have no names to follow by.
    following(ck, operator = "0") { f =>
      def status = mapper.readTree(AnswerJson.render(AnswerJson.followerStatus(f)))
      assert(f.status.lag == FollowerLag(None, None, 0, 0))
      assert(status.get("lag").toString == """{"appliedBatch":null,"leaderBatch":null,"batches":0,"millis":0}""")
      assert(failures(scan(f)) == Map(0 -> "NOT_PRESENT", 1 -> "NOT_PRESENT"))
      logBatch(ck, 0)
      f.poll()
      assert(rowsOf(scan(f)) == Map(Seq("a") -> Seq(1L, 2L), Seq("b") -> Seq(3L, 4L)))
      assert(f.status.lag == FollowerLag(Some(0), Some(0), 0, 0) && f.status.reanchors == 0)
      assert(status.get("lag").toString == """{"appliedBatch":0,"leaderBatch":0,"batches":0,"millis":0}""")
      assert(status.get("follower").asText == f.id && status.get("partitions").toString == "[0,1]")
      assert(status.get("polls").asLong >= 2 && status.get("lastError").isNull && !status.get("closed").asBoolean)
    }
  }

  test("a follower of a partition the store does not have is refused, and leaves nothing open or on disk") {
    val ck = sparkRunCheckpoint("agg")
    val local = newTempDir("replicas")
    val e = intercept[IllegalArgumentException](following(ck, followOptions(local, Some(Seq(0, 2))))(_ => ()))
    assert(e.getMessage == "[TXSTATE_QUERY_BAD_REQUEST] partition 2 does not exist: store 'default' of operator 0 " +
      "has partitions 0 to 1")
    assert(local.list().isEmpty)
    val missing = intercept[IllegalArgumentException](following(newCheckpoint())(_ => ()))
    assert(missing.getMessage.startsWith("[TXSTATE_QUERY_UNKNOWN_OPERATOR]"))
  }

  test("one request id starts one follower, however often the request is planned") {
    val ck = sparkRunCheckpoint("agg")
    following(ck, requestId = Some("plan-1")) { first =>
      following(ck, requestId = Some("plan-1"))(again => assert(again eq first))
      // The inner block closed it: the same request id now starts a new follower.
      following(ck, requestId = Some("plan-1"))(after => assert(after.id != first.id))
      following(ck, requestId = Some("plan-2"))(other => assert(other.id != first.id))
    }
  }

  test("closing forgets a follower and deletes its replicas; asking for it again names the followers still open") {
    val ck = sparkRunCheckpoint("agg")
    val local = newTempDir("replicas")
    following(ck) { other =>
      val f = Followers.follow(ck.root, "0", "default", hadoopConf, followOptions(local))
      assert(Followers.get(f.id) eq f)
      assert(local.list().length == 2)
      assert(Seq(0, 1).forall(p => local.list().exists(_.startsWith(s"txstate-follower-op0-part$p-"))))
      assert(Followers.close(f.id) && !Followers.close(f.id))
      assert(local.list().isEmpty && f.status.closed)
      val e = intercept[IllegalArgumentException](Followers.get(f.id))
      assert(e.getMessage.startsWith(s"[TXSTATE_FOLLOWER_UNKNOWN] there is no follower '${f.id}' in this JVM"))
      val open = e.getMessage.split("open followers: ")(1)
      assert(open.contains(other.id) && !open.contains(f.id))
    }
  }

  test("a poll interval under 10 ms or a replay limit under 1 is refused") {
    assert(intercept[IllegalArgumentException](FollowOptions(pollIntervalMs = 9)).getMessage
      .endsWith("pollIntervalMs must be >= 10, got 9"))
    assert(intercept[IllegalArgumentException](FollowOptions(replayLimit = 0)).getMessage
      .endsWith("replayLimit must be >= 1, got 0"))
    assert(FollowOptions() == FollowOptions(None, 200L, 20, System.getProperty("java.io.tmpdir")))
  }
}
