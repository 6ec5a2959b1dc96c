package txstate.store

import txstate.engine.EngineOptions

/**
 * How one store instance behaves, independent of Spark (the adapter builds it from Spark's
 * settings).
 *
 * @param engine           native memory and tuning of the local database
 * @param idsInFileNames   checkpoint format v2: changelog names carry the checkpoint id
 * @param snapshotInterval versions between staged snapshots
 * @param limits           when a batch's buffer is moved out of memory by an early commit
 */
final case class StoreOptions(
    engine: EngineOptions = EngineOptions(),
    idsInFileNames: Boolean = false,
    snapshotInterval: Int = Int.MaxValue,
    limits: UncommittedLimits = UncommittedLimits.none) {
  require(snapshotInterval >= 1, s"snapshotInterval must be >= 1, got $snapshotInterval")
}

/** The most uncommitted entries or bytes a batch holds in memory; None: no limit. */
final case class UncommittedLimits(maxRecords: Option[Long], maxBytes: Option[Long]) {
  def exceededBy(entries: Long, bytes: Long): Boolean = maxRecords.exists(entries > _) || maxBytes.exists(bytes > _)
}

object UncommittedLimits {
  val none: UncommittedLimits = UncommittedLimits(None, None)
}
