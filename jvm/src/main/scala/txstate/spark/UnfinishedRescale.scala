package txstate.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Refuses to run the batch an in-place rescale added (`migrate --to txstate --partitions N`) when
 * that rescale stopped between writing the batch's offset entry and its commit entry. Spark pins a
 * query's shuffle partition count, so two consecutive offset entries with different counts mean
 * exactly that batch; resumed, it would load the old partitions at the old version under the new
 * count and write over the rescaled state. Spark 4.2 and newer refuse it themselves
 * (`STREAMING_UNFINISHED_REPARTITION_DETECTED`); 3.5 to 4.1 do not, so the provider checks, once
 * per store instance, at its first batch.
 */
private[spark] object UnfinishedRescale {
  /** Fails when batch `batchId` of the query holding `stateRoot` changes the partition count of the batch before. */
  def check(stateRoot: Path, batchId: Long, hadoopConf: Configuration): Unit = if (batchId > 0) {
    val offsets = new Path(stateRoot.getParent, "offsets")
    // None for an entry that is gone (cleaned up) or that has no count: nothing to compare.
    (ShufflePartitions.recorded(new Path(offsets, batchId.toString), hadoopConf),
      ShufflePartitions.recorded(new Path(offsets, (batchId - 1).toString), hadoopConf)) match {
      case (Some(now), Some(before)) if now != before =>
        throw TxStateErrors.unfinishedRescale(stateRoot.getParent.toString, batchId, before, now)
      case _ => ()
    }
  }
}
