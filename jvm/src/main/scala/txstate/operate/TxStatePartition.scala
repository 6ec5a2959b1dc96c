package txstate.operate

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import txstate.checkpoint.{ChangelogFile, CheckpointFileException, CheckpointReader, CheckpointReads, Lineage,
  LineageChain}

/**
 * One txstate store partition as a load of `version` would see it: the checkpoint id of that version
 * (from Spark's commit log under format v2, from its changelog under v1), its changelog's header,
 * and the lineage walk down to the newest snapshot on it. Headers only: inspect reads no records.
 */
final class TxStatePartition(val reader: CheckpointReader, reads: CheckpointReads, val idsInFileNames: Boolean) {
  def exists(path: Path): Boolean = reads.exists(path)

  def idInName(id: String): Option[String] = if (idsInFileNames) Some(id) else None

  /** The checkpoint id of `version`: `committedId` under format v2, its changelog's under v1. */
  def checkpointId(version: Long, committedId: Option[String]): String =
    if (idsInFileNames) committedId.getOrElse(throw OperateErrors.badArgument(s"version $version of ${reader.root}",
      "has no checkpoint id in Spark's commit log, which checkpoint format v2 needs"))
    else reader.readChangelogHeader(version, None).checkpointId

  def facts(version: Long, id: String): TxStateVersionFacts = {
    val header = reader.readChangelogHeader(version, idInName(id))
    val format = ChangelogFile.readFileFormat(reads, reader.changelogPath(version, idInName(id)))
    TxStateVersionFacts(header.numKeys, header.commitTimeMs, header.storageFormat, format, header.writtenBy,
      Some(header.stamp.timeMs).filter(_ >= 0))
  }

  /** The chain a rebuild of `version` would take, skipping the snapshots in `unusable`. */
  def chain(version: Long, id: String, unusable: Set[(Long, String)] = Set.empty): LoadChain =
    walk(version, id, reader.snapshotIds() -- unusable) match {
      case Right(LineageChain(headers, level, levelId)) => LoadChain(levelId.map(_ => level), headers.map(_.version), None)
      case Left(break) => LoadChain(None, Nil, Some(break.reason))
    }

  /**
   * The lineage walk a rebuild does: down from `version` to the newest snapshot of `usable` (as
   * (version, checkpoint id)) or an empty store.
   */
  def walk(version: Long, id: String, usable: Set[(Long, String)]): Either[ChainBreak, LineageChain] = {
    try {
      Lineage.walkDown(reader, version, Some(id), idsInFileNames)((level, at) => at.exists(i => usable((level, i))))
        .left.map(link => ChainBreak(Some(link.path), s"the lineage is broken: $link"))
    } catch {
      case e: CheckpointFileException => Left(ChainBreak(Some(e.path), e.getMessage))
      case NonFatal(e) => Left(ChainBreak(None, e.toString))
    }
  }
}

/** Where and why a lineage walk stopped short: the file at fault, when one is. */
final case class ChainBreak(path: Option[Path], reason: String)
