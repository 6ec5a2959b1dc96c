package txstate.operate

/**
 * Skew of one store: its largest partition against the median, by keys where every partition's
 * count is known (txstate), else by bytes on the checkpoint. A store is flagged when the largest
 * holds at least [[Skews.flagRatio]] times the median and enough to matter.
 */
object Skews {
  val flagRatio = 2.0
  private val minimumKeys = 1000L
  private val minimumBytes = 16L << 20

  def of(partitions: Seq[PartitionFacts], checkpoint: String): Option[Skew] =
    if (partitions.size < 2) None
    else {
      val byKeys = partitions.forall(_.keys.isDefined)
      val measured = partitions.map(p => p.partition -> (if (byKeys) p.keys.get else p.bytes.total))
      val sorted = measured.map(_._2).sorted
      val median = sorted((sorted.size - 1) / 2)
      val (largestPartition, largest) = measured.maxBy(_._2)
      val ratio = largest.toDouble / math.max(median, 1L)
      val flagged = ratio >= flagRatio && largest >= (if (byKeys) minimumKeys else minimumBytes)
      val measure = if (byKeys) "keys" else "bytes"
      Some(Skew(measure, largestPartition, largest, median, ratio, flagged,
        if (!flagged) None else Some(advice(largestPartition, ratio, measure, partitions.size, checkpoint))))
    }

  private def advice(partition: Int, ratio: Double, measure: String, count: Int, checkpoint: String): String =
    f"partition $partition holds $ratio%.1fx the median partition's $measure. Many keys hashing there: rescale " +
      s"to more partitions (python -m txstate_spark migrate $checkpoint --to txstate --partitions ${count * 2}, " +
      "with the query stopped). A few hot keys: no partition count splits one key; add a salt column to the " +
      "grouping key, or let a two-stage aggregation combine partial results."
}
