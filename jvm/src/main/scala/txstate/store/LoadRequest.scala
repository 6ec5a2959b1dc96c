package txstate.store

/** Which version a batch starts from, and how Spark asked for it. */
sealed trait LoadRequest {
  def version: Long
}

object LoadRequest {
  /**
   * Version `version` on the lineage Spark names: `checkpointId` under checkpoint format v2; under
   * v1 it is None and the checkpoint's own `<version>.txlog` decides.
   */
  final case class AtVersion(version: Long, checkpointId: Option[String]) extends LoadRequest

  /** An empty store at `version` (Spark's `loadEmpty`); its next commit starts a new lineage. */
  final case class Empty(version: Long) extends LoadRequest

  /**
   * `version` rebuilt from the snapshot of `snapshotVersion` and the changelogs after it (Spark's
   * state data source with `snapshotStartBatchId`): no newer snapshot is used.
   */
  final case class FromSnapshot(snapshotVersion: Long, version: Long, checkpointId: Option[String]) extends LoadRequest
}
