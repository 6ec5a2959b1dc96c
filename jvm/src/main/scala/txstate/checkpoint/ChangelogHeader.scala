package txstate.checkpoint

/**
 * What a changelog says about itself. `changelogId` is unique per commit attempt; `baseChangelogId`
 * names the version it was written on top of, so a chain of changelogs proves one lineage even
 * where a re-run batch overwrote a file (checkpoint format v1) or several attempts coexist (v2).
 */
final case class ChangelogHeader(
    version: Long,
    changelogId: String,
    baseChangelogId: Option[String],
    numKeys: Long,
    commitTimeMs: Long,
    segments: Int = 0)
