package txstate.engine

/**
 * When a row was last written (KIP-258's timestamp): the micro-batch and that batch's timestamp,
 * which Spark records once per batch in its offset log, so every retry of the batch writes the same
 * stamp. -1 means unknown: storage format 1 (0.1.0) kept no stamps, a migrated row's age is not
 * known, and a batch run outside a streaming query has no timestamp. Unknown is never guessed.
 */
final case class WriteStamp(batchId: Long, timeMs: Long) {
  def knownBatch: Option[Long] = if (batchId >= 0) Some(batchId) else None
  def knownTimeMs: Option[Long] = if (timeMs >= 0) Some(timeMs) else None
}

object WriteStamp {
  val unknown: WriteStamp = WriteStamp(-1L, -1L)
}

/**
 * Opt-in state TTL for one transaction: a row whose last write is `ttlMs` or more before the
 * batch's timestamp is gone (docs/ARCHITECTURE.md, "Timestamped state and TTL"). Rows outside
 * `applies` never expire (the adapter keeps its column-family registry there).
 */
final case class TimeToLive(ttlMs: Long, applies: Array[Byte] => Boolean) {
  require(ttlMs > 0, s"ttlMs must be > 0, got $ttlMs")
}
