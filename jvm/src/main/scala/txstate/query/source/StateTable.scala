package txstate.query.source

import java.util

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownFilters, SupportsPushDownLimit}
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import txstate.query.StoreDescription

/**
 * The rows of one store: `key` and `value` structs, and where each row was read; with `timestamps`,
 * also when each row was last written (null when that is not known).
 */
private[source] object StateRows {
  def schema(d: StoreDescription, timestamps: Boolean): StructType = StructType(Seq(
    StructField("key", d.schema.keySchema, nullable = false),
    StructField("value", d.schema.valueSchema, nullable = true),
    StructField("partition_id", IntegerType, nullable = false),
    StructField("batch_id", LongType, nullable = false),
    StructField("commit_time", TimestampType, nullable = false)) ++
    (if (timestamps) Seq(StructField("last_written_batch", LongType, nullable = true),
      StructField("last_written_ms", LongType, nullable = true)) else Nil))
}

private[source] final class StateTable(spark: SparkSession, store: SourceStore, options: SourceOptions)
    extends Table with SupportsRead {
  private val d = store.description

  override def name(): String = s"txstate ${d.checkpoint} operator ${d.operatorId} store ${d.storeName}"
  override def schema(): StructType = StateRows.schema(d, options.timestamps)
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)
  override def newScanBuilder(ignored: CaseInsensitiveStringMap): ScanBuilder = new StateScanBuilder(spark, store, options)
}

/**
 * Takes Spark's filters and limit. Every filter is also handed back for Spark to apply after the
 * read: what [[KeyFilters]] makes of them only narrows what is read.
 */
private[source] final class StateScanBuilder(spark: SparkSession, store: SourceStore, options: SourceOptions)
    extends ScanBuilder with SupportsPushDownFilters with SupportsPushDownLimit {
  private var plan = KeyFilters.Plan(KeyRead.Scan, None, Nil)
  private var limit = Option.empty[Int]

  override def pushFilters(filters: Array[Filter]): Array[Filter] = {
    plan = KeyFilters.plan(store.description.schema.keySchema, filters.toSeq)
    filters
  }

  override def pushedFilters(): Array[Filter] = plan.used.toArray

  override def pushLimit(n: Int): Boolean = {
    limit = Some(n)
    true
  }

  // Each partition returns at most the limit; Spark applies it across partitions.
  override def isPartiallyPushed: Boolean = true

  override def build(): Scan = {
    val scan = new StateScan(spark, store, options, plan, limit)
    if (store.follower.isDefined) new FollowerScan(spark, scan) else scan
  }
}
