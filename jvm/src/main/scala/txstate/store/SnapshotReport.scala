package txstate.store

/** One snapshot upload: the version, bytes copied and bytes reused from earlier snapshots. */
final case class SnapshotReport(version: Long, uploadedBytes: Long, reusedBytes: Long, files: Int, durationMs: Long)

/** One cleanup pass: files deleted from the checkpoint and the oldest version still loadable. */
final case class CleanupReport(changelogsDeleted: Int, snapshotsDeleted: Int, storedFilesDeleted: Int,
    oldestLoadableVersion: Long)

/** One early commit: entries moved out of memory, segment bytes written, time taken. */
final case class SpillReport(entries: Long, segmentBytes: Long, durationMs: Long)
