package txstate.store

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
}

final case class LoadReport(version: Long, path: LoadPath, changelogsReplayed: Int, durationMs: Long)

final case class CommitReport(version: Long, changelogBytes: Long, durationMs: Long)
