package txstate.query

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession

import txstate.spark.LiveStores

/**
 * A query that runs but has not committed its first batch has no store to describe yet (its
 * operator metadata and schema files come with that batch). Its stores are not missing, only
 * behind: every partition answers `NOT_UP_TO_BOUND` ("no batch committed yet"), which a client
 * retries, instead of `UNKNOWN_OPERATOR`.
 */
private[query] object BeforeFirstCommit {
  /** The partition count of a running query on `checkpoint` without a commit yet; None otherwise. */
  def partitions(spark: SparkSession, checkpoint: String, runId: Option[UUID], hadoopConf: Configuration): Option[Int] = {
    val root = LiveStores.normalize(StoreLocator.qualify(checkpoint, hadoopConf).toString)
    val running = runId.filter(id => spark.streams.active.exists(_.runId == id))
      .orElse(StateQueryExecutor.runningQueryOn(spark, root))
    if (running.isEmpty || StoreLocator.latestCommittedBatch(root, hadoopConf).isDefined) None
    else Some(StoreLocator.recordedShufflePartitions(root, hadoopConf)
      .getOrElse(spark.conf.get("spark.sql.shuffle.partitions").toInt))
  }

  def message(checkpoint: String): String =
    s"no batch committed yet: the query on $checkpoint has not committed its first batch; retry once it has"

  /** The answer of every partition: behind the bound, whatever it is. */
  def result(partitions: Int, checkpoint: String): StateQueryResult = StateQueryResult(
    (0 until partitions).map(p => p -> QueryResult(p, Left(QueryFailure(FailureReason.NotUpToBound,
      s"partition $p: ${message(checkpoint)}")), None, Nil)).toMap,
    MergedPosition(Map.empty), None)
}
