package txstate.store

import txstate.engine.{CacheStats, CommitPoint}

/** How a version was made current in the local database. */
sealed trait LoadPath
object LoadPath {
  /** The local database already held the version on the requested lineage: no work. */
  case object Reused extends LoadPath
  /** The last local commit was undone from the retained pre-commit view (a re-run batch). */
  case object RolledBack extends LoadPath
  /** The local database was behind on the same lineage: only the missing changelogs were replayed. */
  case object CaughtUp extends LoadPath
  /** The local database was dropped and the version rebuilt from the checkpoint files. */
  case object Rebuilt extends LoadPath
  /** Spark asked for an empty store at the version (`loadEmpty`): a new lineage starts. */
  case object StartedEmpty extends LoadPath
}

/** One load: the version made current, how, and what it cost. */
final case class LoadReport(version: Long, path: LoadPath, changelogsReplayed: Int, durationMs: Long)

/** One commit: the commit point written, the changelog's size, and the time taken. */
final case class CommitReport(point: CommitPoint, changelogBytes: Long, durationMs: Long) {
  def version: Long = point.version
}

/** One early commit: entries moved out of memory, segment bytes written, time taken. */
final case class EarlyCommitReport(entries: Long, segmentBytes: Long, durationMs: Long)

/** One snapshot upload: the version, bytes copied and bytes reused from earlier snapshots. */
final case class SnapshotReport(version: Long, uploadedBytes: Long, reusedBytes: Long, files: Int, durationMs: Long)

/** Snapshot uploads done by maintenance since the last batch reported them. */
final case class SnapshotActivity(uploadedBytes: Long, reusedBytes: Long, lastVersion: Long) {
  def +(other: SnapshotActivity): SnapshotActivity =
    SnapshotActivity(uploadedBytes + other.uploadedBytes, reusedBytes + other.reusedBytes,
      math.max(lastVersion, other.lastVersion))
}

object SnapshotActivity {
  val none: SnapshotActivity = SnapshotActivity(0L, 0L, 0L)
  def of(report: SnapshotReport): SnapshotActivity = SnapshotActivity(report.uploadedBytes, report.reusedBytes, report.version)
}

/**
 * What one batch did, for metrics: peaks of its uncommitted buffer, its early commits, the rows
 * TTL expired in it, the instance's undo the heap budget dropped since the last batch, and (once it committed) the commit and the instance's state right after it, so metrics read after the
 * batch never touch an instance that may have been closed since.
 */
final case class BatchStats(
    peakEntries: Long = 0L,
    peakBytes: Long = 0L,
    earlyCommits: Long = 0L,
    earlyCommitEntries: Long = 0L,
    earlyCommitBytes: Long = 0L,
    commit: Option[CommitReport] = None,
    snapshotActivity: SnapshotActivity = SnapshotActivity.none,
    snapshotLagVersions: Long = 0L,
    nativeMemoryBytes: Long = 0L,
    expiredEntries: Long = 0L,
    oldestWriteMs: Option[Long] = None,
    cache: CacheStats = CacheStats.zero,
    undoDropped: Long = 0L) {
  def withEarlyCommit(r: EarlyCommitReport): BatchStats =
    copy(earlyCommits = earlyCommits + 1, earlyCommitEntries = earlyCommitEntries + r.entries,
      earlyCommitBytes = earlyCommitBytes + r.segmentBytes)
}
