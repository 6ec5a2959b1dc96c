package txstate.query.source

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{Batch, InputPartition, LocalScan, PartitionReaderFactory, Scan}
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, TxStateSparkBridge}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

import txstate.query.{PageCursor, PositionBound, ResolvedQuery}

/**
 * Plans a read on the driver: which partitions (those owning the looked-up keys or prefix when
 * the store's placement is known, else all; narrowed by `partition_id` filters), what each one
 * runs, and where: the executor the state store coordinator last saw holding the store.
 */
private[source] final class StateScan(spark: SparkSession, store: SourceStore, options: SourceOptions,
    plan: KeyFilters.Plan, limit: Option[Int]) extends Scan with Batch {
  private val d = store.description

  override def readSchema(): StructType = StateRows.schema(d, options.timestamps)

  override def description(): String =
    s"txstate[${store.follower.fold("")(id => s"follower $id of ")}${d.checkpoint} operator ${d.operatorId}${d.operatorName.fold("")(n => s" ($n)")} store ${d.storeName}: " +
      s"${plan.read.describe} in ${partitions.size} of ${d.numPartitions} partitions" +
      limit.fold("")(n => s", limit $n per partition") + options.changedSince.fold("")(c => s", ${c.describe}") +
      (if (plan.used.isEmpty) "" else s", pushed ${plan.used.mkString(", ")}") + "]"

  override def toBatch: Batch = this

  private lazy val partitions: Seq[(Int, ResolvedQuery)] = {
    val all = (0 until d.numPartitions).filter(p => plan.partitions.forall(_.contains(p)))
    val cursor = PageCursor(limit.getOrElse(StateScan.unlimited), None, finished = false)
    val changedSince = options.changedSince
    plan.read match {
      case KeyRead.Keys(keys) =>
        d.placement match {
          case Some(placement) =>
            keys.groupBy(placement.partitionOf).toSeq.filter(e => all.contains(e._1)).sortBy(_._1)
              .map { case (p, owned) => p -> ResolvedQuery.Get(owned, single = false, changedSince) }
          case None => all.map(_ -> ResolvedQuery.Get(keys, single = false, changedSince))
        }
      case KeyRead.Prefix(prefix, columns) =>
        val query = ResolvedQuery.Prefix(prefix, columns, cursor, changedSince)
        d.placement.filter(_ => d.hashedColumns.exists(_ <= columns)) match {
          case Some(placement) => Seq(placement.partitionOf(prefix)).filter(all.contains).map(_ -> query)
          case None => all.map(_ -> query)
        }
      case KeyRead.Range(lower, upper) => all.map(_ -> ResolvedQuery.Range(lower, upper, descending = false, cursor, changedSince))
      case KeyRead.Scan => all.map(_ -> ResolvedQuery.Scan(cursor, changedSince))
    }
  }

  override def planInputPartitions(): Array[InputPartition] = {
    val bound = options.minBatchId.fold(PositionBound.unbounded)(PositionBound.atLeastBatch)
    partitions.map { case (p, query) =>
      val location = store.runId.flatMap(id =>
        TxStateSparkBridge.storeLocation(spark, StateStoreId(d.stateRoot, d.operatorId, p, d.storeName), id))
      StatePartition(d, p, store.runId, query, bound, options.requireActive, options.checkpointReads, options.waitMs,
        location, store.follower, options.timestamps)
    }.toArray
  }

  override def createReaderFactory(): PartitionReaderFactory =
    new StateReaderFactory(spark.sparkContext.broadcast(new SerializableConfiguration(spark.sessionState.newHadoopConf())))
}

private object StateScan {
  // Not Int.MaxValue: readers keep a page plus one row to know whether more follow.
  val unlimited: Int = Int.MaxValue - 1
}

/**
 * A read through a follower: its replicas live in this (the driver's) JVM, so the partitions are
 * read here while the read is planned and handed to Spark as local rows. A streaming query that
 * joins against such a read plans it again, and so reads the follower's newest batches, every
 * micro-batch.
 */
private[source] final class FollowerScan(spark: SparkSession, scan: StateScan) extends LocalScan {
  override def readSchema(): StructType = scan.readSchema()
  override def description(): String = scan.description()
  override def rows(): Array[InternalRow] = {
    val conf = spark.sessionState.newHadoopConf()
    scan.planInputPartitions().flatMap { p =>
      val reader = new StatePartitionReader(p.asInstanceOf[StatePartition], conf)
      Iterator.continually(reader).takeWhile(_.next()).map(_.get().copy()).toList
    }
  }
}
