package txstate.query

/**
 * Where one partition's answer comes from: a committed version of its store, which holds the
 * state after batch `batchId` (Spark's state version v follows batch v - 1), and the source
 * offsets that batch read, as Spark's offset log records them (one JSON string per source).
 */
final case class Position(version: Long, checkpointId: Option[String], commitTimeMs: Long, sourceOffsets: Seq[String]) {
  def batchId: Long = version - 1
}

/**
 * The positions of a whole answer, per partition. Partitions commit independently, so they may
 * answer from different batches; the merged position is the oldest of them: every partition is
 * at least there.
 */
final case class MergedPosition(partitions: Map[Int, Position]) {
  def oldest: Option[Position] = partitions.values.toSeq.sortBy(_.version).headOption
  def batchId: Option[Long] = oldest.map(_.batchId)
}

/** The oldest position a request accepts; a partition behind it answers `NOT_UP_TO_BOUND`. */
sealed trait PositionBound extends Serializable {
  /** The lowest batch id `partition` may answer from (-1: any, even an empty store). */
  def minBatch(partition: Int): Long
}

object PositionBound {
  case object Unbounded extends PositionBound {
    def minBatch(partition: Int): Long = -1L
  }

  /** Every partition at batch `batchId` or later. */
  final case class AtLeastBatch(batchId: Long) extends PositionBound {
    def minBatch(partition: Int): Long = batchId
  }

  /**
   * At least a position seen before: each partition at least where it was in `position`, and
   * partitions it does not name at least its oldest batch. Positions therefore never go backwards.
   */
  final case class AtLeast(position: MergedPosition) extends PositionBound {
    def minBatch(partition: Int): Long =
      position.partitions.get(partition).map(_.batchId).orElse(position.batchId).getOrElse(-1L)
  }

  def unbounded: PositionBound = Unbounded
  def atLeastBatch(batchId: Long): PositionBound = AtLeastBatch(batchId)
  def atLeast(position: MergedPosition): PositionBound = AtLeast(position)
}
