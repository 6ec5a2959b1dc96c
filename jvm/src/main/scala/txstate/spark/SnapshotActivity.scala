package txstate.spark

/** Snapshot uploads done by maintenance since the last batch reported them. */
private[spark] final case class SnapshotActivity(uploadedBytes: Long, reusedBytes: Long, lastVersion: Long) {
  def +(other: SnapshotActivity): SnapshotActivity =
    SnapshotActivity(uploadedBytes + other.uploadedBytes, reusedBytes + other.reusedBytes,
      math.max(lastVersion, other.lastVersion))
}

private[spark] object SnapshotActivity {
  val none: SnapshotActivity = SnapshotActivity(0L, 0L, 0L)
}
