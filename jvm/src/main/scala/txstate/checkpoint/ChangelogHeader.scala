package txstate.checkpoint

/**
 * What a changelog says about itself. `checkpointId` is unique per commit attempt; `baseCheckpointId`
 * names the version it was written on top of, so a chain of changelogs proves one lineage even
 * where a re-run batch overwrote a file (checkpoint format v1) or several attempts coexist (v2).
 * `segments` counts the early-commit segments (`.txseg`) whose records come before the changelog's own.
 */
final case class ChangelogHeader(
    version: Long,
    checkpointId: String,
    baseCheckpointId: Option[String],
    numKeys: Long,
    commitTimeMs: Long,
    segments: Int = 0)
