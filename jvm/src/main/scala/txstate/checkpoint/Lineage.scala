package txstate.checkpoint

import scala.annotation.tailrec

import org.apache.hadoop.fs.Path

/**
 * The changelogs that lead from `level` up to the version a walk started at, oldest first.
 * `levelId` is the checkpoint id of the version at `level` (None: an empty store).
 */
final case class LineageChain(headers: List[ChangelogHeader], level: Long, levelId: Option[String])

/** Where a lineage walk found a changelog that is not the one its successor was built on. */
final case class BrokenLink(version: Long, path: Path, reason: String) {
  override def toString: String = s"$path $reason"
}

/**
 * Walks a store's lineage: every commit has a checkpoint id, and each changelog names the id of the
 * version it was built on, so following `baseCheckpointId` down from a version proves which files
 * belong to its history (docs/ARCHITECTURE.md, "Lineage").
 */
object Lineage {
  /**
   * Walks down from `version`, whose checkpoint id is `topId` (None only for version 0), one
   * changelog header at a time, until `stop(level, id)` holds or the chain reaches its root (a
   * changelog built on an empty store). A changelog whose header is damaged or misnumbered raises
   * [[CorruptChangelogException]]; a missing one [[MissingChangelogException]].
   */
  def walkDown(checkpoint: CheckpointReader, version: Long, topId: Option[String], idsInFileNames: Boolean)
      (stop: (Long, Option[String]) => Boolean): Either[BrokenLink, LineageChain] = {
    def idInName(id: Option[String]): Option[String] = if (idsInFileNames) id else None

    @tailrec
    def walk(above: List[ChangelogHeader], level: Long, expected: Option[String]): Either[BrokenLink, LineageChain] =
      if (expected.isEmpty || stop(level, expected)) Right(LineageChain(above, level, expected))
      else if (level == 0) {
        Left(BrokenLink(1, checkpoint.changelogPath(1, idInName(above.headOption.map(_.checkpointId))),
          s"was built on ${expected.get}, but version 0 is an empty store"))
      } else {
        val path = checkpoint.changelogPath(level, idInName(expected))
        val header = checkpoint.readChangelogHeader(level, idInName(expected))
        if (header.version != level) {
          throw CheckpointErrors.corruptChangelog(path, s"it says it is version ${header.version}, not $level")
        }
        if (!expected.contains(header.checkpointId)) {
          // A damaged header reads as a broken link: the full read (checksummed) names the damage instead.
          checkpoint.readChangelog(level, idInName(expected))
          Left(BrokenLink(level, path, s"has checkpoint id ${header.checkpointId}, but the version above it was " +
            s"built on ${expected.get}"))
        } else walk(header :: above, level - 1, header.baseCheckpointId)
      }

    walk(Nil, version, topId)
  }
}
