package txstate.query.source

import java.io.File
import java.util.UUID

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.Background
import txstate.query.{PageCursor, PositionBound, ResolvedQuery, StoreLocator}
import txstate.query.follow.{FollowOptions, Followers}
import txstate.spark.{CheckpointFixture, KeyPlacement}

/**
 * `spark.read.format("txstate")` in a small local Spark session over the checkpoint of a real
 * Spark run (txstate state, two partitions): the table's schema (StateTable), what a read's target
 * resolves to (SourceTargets), and which reads the pushed filters become.
 */
final class TxStateSourceTest extends AnyFunSuite with CheckpointFixture {
  import CheckpointFixture._

  private lazy val spark = SparkSession.builder().master("local[1]").appName("TxStateSourceTest")
    .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate()
  private lazy val ck = sparkRunCheckpoint("agg")
  private val owner = new KeyPlacement(aggKeySchema, 1, 2)
  private val aggKey = new RowMaker(aggKeySchema)

  override def afterAll(): Unit = try spark.stop() finally super.afterAll()

  private def txstate: org.apache.spark.sql.DataFrameReader = spark.read.format("txstate")

  private def state(df: DataFrame): Map[Seq[Any], Seq[Any]] =
    df.select("key.*", "value.*").collect().map(r => Seq[Any](r.getString(0)) -> Seq[Any](r.getLong(1), r.getLong(2))).toMap

  /** The one-line description of the read Spark planned (StateScan.description). */
  private def planned(df: DataFrame): String =
    df.queryExecution.executedPlan.toString.linesIterator.find(_.contains("txstate[")).getOrElse(fail("no txstate scan"))

  test("a stopped query's checkpoint reads as a table: key and value structs, and where each row was read") {
    val df = txstate.load(ck.root)
    assert(df.schema == StructType(Seq(
      StructField("key", aggKeySchema, nullable = false), StructField("value", aggValueSchema, nullable = true),
      StructField("partition_id", IntegerType, nullable = false), StructField("batch_id", LongType, nullable = false),
      StructField("commit_time", TimestampType, nullable = false))))
    val rows = df.collect()
    assert(state(df) == aggState && rows.length == aggState.size)
    rows.foreach { r =>
      assert(r.getAs[Long]("batch_id") == 2L)
      assert(r.getAs[Int]("partition_id") == owner.partitionOf(aggKey(r.getAs[Row]("key").getString(0))))
    }
  }

  test("filters on the key become lookups, prefixes or ranges in the partitions that own them, LIMIT a page size") {
    val key = "key05"
    val lookup = txstate.load(ck.root).where(s"key.k = '$key'")
    assert(planned(lookup).contains("1 key lookup in 1 of 2 partitions"))
    assert(state(lookup) == aggState.filter(_._1 == Seq(key)))
    val range = txstate.load(ck.root).where("key.k >= 'key10'")
    assert(planned(range).contains("range on the first key column (lower and no upper bound) in 2 of 2 partitions"))
    assert(state(range) == aggState.filter(_._1.head.toString >= "key10"))
    val one = txstate.load(ck.root).where("partition_id = 1")
    assert(planned(one).contains("scan in 1 of 2 partitions"))
    assert(state(one) == aggState.filter(e => owner.partitionOf(aggKey(e._1: _*)) == 1))
    val limited = txstate.load(ck.root).limit(3)
    assert(planned(limited).contains("scan in 2 of 2 partitions, limit 3 per partition") && limited.count() == 3)
  }

  test("option timestamps adds when each row was last written, null where no stamp was kept (release 0.1.0)") {
    val df = txstate.option("timestamps", "true").load(ck.root)
    assert(df.schema.fieldNames.toSeq.takeRight(2) == Seq("last_written_batch", "last_written_ms"))
    assert(df.schema("last_written_batch").nullable && df.schema("last_written_ms").dataType == LongType)
    assert(df.where("last_written_batch IS NULL AND last_written_ms IS NULL").count() == aggState.size)
  }

  test("a read of a follower resolves to the follower's store set and reads its replicas") {
    val follower = Followers.follow(ck.root, "0", "default", hadoopConf,
      FollowOptions(pollIntervalMs = 600000L, localDir = newTempDir("replicas").getAbsolutePath))
    try {
      val df = txstate.option("follower", follower.id).load()
      // Read on the driver while the read is planned (a LocalScan): its rows are the replicas' at batch 2.
      assert(df.schema("key").dataType == aggKeySchema && state(df) == aggState)
      assert(df.select("batch_id").distinct().collect().map(_.getLong(0)).toSeq == Seq(2L))
    } finally Followers.close(follower.id)
    val gone = intercept[IllegalArgumentException](txstate.option("follower", follower.id).load())
    assert(gone.getMessage.startsWith(s"[TXSTATE_FOLLOWER_UNKNOWN] there is no follower '${follower.id}'"))
  }

  test("a partition read planned before a running query's first commit waits for that commit") {
    // Batch 0 writes the operator metadata and schema before it commits: a read planned in between
    // describes the store, and its partitions then find no committed batch. They are behind, not missing.
    val copy = sparkRunCheckpoint("agg")
    val commits = copy.file("commits")
    val aside = new File(copy.dir, "commits-aside")
    assert(commits.renameTo(aside))
    val d = StoreLocator.describe(copy.root, "stateStoreSave", "default", hadoopConf)
    def partition(waitMs: Long) = StatePartition(d, 1, Some(UUID.randomUUID()),
      ResolvedQuery.Scan(PageCursor(Int.MaxValue, None, finished = false)), PositionBound.unbounded,
      requireActive = false, checkpointReads = true, waitMs = waitMs, location = None)
    val behind = intercept[IllegalStateException](new StatePartitionReader(partition(300L), hadoopConf))
    assert(behind.getMessage.startsWith("[TXSTATE_SOURCE_NOT_UP_TO_BOUND] partition 1: no batch committed yet"),
      behind.getMessage)
    assert(behind.getMessage.contains("option 'waitMs' waits longer"))

    val planned = Background("a read planned before the first commit")(new StatePartitionReader(partition(30000L), hadoopConf))
    assert(planned.parksWithin(30), "the read did not wait for the commit")
    assert(aside.renameTo(commits), "the commit log was put back")
    val reader = planned.result(30)
    val batches = Iterator.continually(reader).takeWhile(_.next()).map(_.get().getLong(3)).toSeq
    assert(batches.nonEmpty && batches.forall(_ == 2L))
    assert(batches.size == aggState.keys.count(k => owner.partitionOf(aggKey(k: _*)) == 1))
  }

  test("a query name or id no query of this session runs under is refused, naming the queries that run") {
    val byName = intercept[IllegalArgumentException](txstate.option("queryName", "counts").load())
    assert(byName.getMessage == "[TXSTATE_SOURCE_UNKNOWN_QUERY] no streaming query with name 'counts' is running in " +
      "this Spark session; running: none. Pass option 'path' to read a stopped query's checkpoint")
    val id = java.util.UUID.randomUUID()
    val byId = intercept[IllegalArgumentException](txstate.option("queryId", id.toString).load())
    assert(byId.getMessage.startsWith(s"[TXSTATE_SOURCE_UNKNOWN_QUERY] no streaming query with id $id is running"))
  }

  test("a store the checkpoint does not have is refused with the stores it has") {
    val e = intercept[IllegalArgumentException](txstate.option("store", "left-keyToNumValues").load(ck.root))
    assert(e.getMessage.startsWith("[TXSTATE_QUERY_UNKNOWN_STORE]") && e.getMessage.endsWith("its stores are: default"))
  }

  test("option protocol carries the query protocol: one row holding the JSON answer") {
    val request = s"""{"checkpoint": "${ck.root}", "operator": "stateStoreSave", "store": "default", "runId": null}"""
    val rows = txstate.option("protocol", "describe").option("request", request).load().collect()
    val answer = new ObjectMapper().readTree(rows.head.getString(0))
    assert(rows.length == 1 && answer.get("numPartitions").asInt == 2 && answer.get("operatorId").asInt == 0)
    assert(DataType.fromJson(answer.get("keySchema").toString) == aggKeySchema)
  }
}
