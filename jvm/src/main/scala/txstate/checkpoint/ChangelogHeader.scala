package txstate.checkpoint

import txstate.engine.{CommitPoint, WriteStamp}

/**
 * What a changelog says about itself. `checkpointId` is unique per commit attempt; `baseCheckpointId`
 * names the version it was written on top of, so a chain of changelogs proves one lineage even
 * where a re-run batch overwrote a file (checkpoint format v1) or several attempts coexist (v2).
 * `segments` counts the early-commit segments (`.txseg`) whose records come before the changelog's own.
 * The storage fields (format, the batch's write stamp, the TTL index start, the writing release)
 * are those of the version's commit point, so a replay rebuilds it exactly; changelogs written
 * before storage format 2 read as format 1 with no stamp.
 */
final case class ChangelogHeader(
    version: Long,
    checkpointId: String,
    baseCheckpointId: Option[String],
    numKeys: Long,
    commitTimeMs: Long,
    segments: Int = 0,
    storageFormat: Int = CommitPoint.currentFormatVersion,
    stamp: WriteStamp = WriteStamp.unknown,
    timeIndexSinceMs: Option[Long] = None,
    writtenBy: String = txstate.engine.Release.writer) {

  /** The commit point of the version this changelog completes. */
  def commitPoint: CommitPoint =
    CommitPoint(version, Some(checkpointId), storageFormat, commitTimeMs, numKeys, stamp, timeIndexSinceMs, writtenBy)
}

object ChangelogHeader {
  /** The header of the version `point` describes, written on top of `baseCheckpointId`. */
  def of(point: CommitPoint, baseCheckpointId: Option[String], segments: Int): ChangelogHeader =
    ChangelogHeader(point.version, point.checkpointId.get, baseCheckpointId, point.numKeys, point.commitTimeMs, segments,
      point.formatVersion, point.stamp, point.timeIndexSinceMs, point.writtenBy)
}
