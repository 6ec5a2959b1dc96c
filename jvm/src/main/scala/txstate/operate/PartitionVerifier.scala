package txstate.operate

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import txstate.checkpoint.{CheckpointEntry, CheckpointFileException, CheckpointListing, LineageChain, SnapshotFile}

/**
 * Verifies one txstate store partition (docs/ARCHITECTURE.md, "Inspect and verify"): reads every
 * changelog, segment and manifest whole (frame, checksum, the version and id inside against the
 * name, every record), every stored file a manifest lists (size and CRC32C), then proves that each
 * retained version loads: the lineage walk a rebuild takes, with the damaged snapshots left out, and
 * every changelog of the chain sound. A file that breaks no retained version is still reported.
 */
/** A version that cannot load, and the file at fault (None: no single file). */
private final case class Unloadable(version: Long, path: Option[Path], reason: String)

final class PartitionVerifier(partition: TxStatePartition, label: String, number: Int, progress: OperateProgress) {
  private val reader = partition.reader

  /**
   * [[run]] over the versions within `retain` of `version` (what a restart loads), made again when
   * a running query may have moved the files under it. Its maintenance uploads snapshots and
   * deletes the files below them while verify reads: a changelog listed at the start and deleted
   * before its read is cleaned up, not damaged, and the versions below the query's newest changelog
   * less `retain` need not load any more. So a pass with findings, during which the files changed
   * or after which the query has committed past `version`, is made again (at most
   * [[PartitionVerifier.attempts]] in all), from a fresh listing and over the versions the query
   * still keeps. On a stopped query the first pass is the answer.
   */
  def verify(version: Long, retain: Int, committedId: Long => Option[String]): (Seq[Finding], PartitionCheck) = {
    def newestIn(listing: CheckpointListing) = listing.changelogs.map(_.version).foldLeft(version)(math.max)
    @scala.annotation.tailrec
    def attempt(n: Int, floor: Long): (Seq[Finding], PartitionCheck) = {
      val before = reader.listing()
      // The store's cleanup keeps `retain` versions up to its newest changelog, which may be one
      // Spark never committed (a run stopped between the store's commit and Spark's): the versions
      // below that window were deleted as kept, never lost. `version` itself always loads.
      val oldest = math.min(version, math.max(floor, newestIn(before) - retain + 1))
      val result = run(version, oldest, committedId, before)
      val after = reader.listing()
      // `version` + 1 may be a failed batch's changelog on a stopped query; past it the query runs.
      val newest = newestIn(after)
      val moved = before.names != after.names || newest > version + 1
      if (result._1.isEmpty || !moved || n >= PartitionVerifier.attempts) result
      else attempt(n + 1, math.max(oldest, newest - retain + 1))
    }
    attempt(1, math.max(1L, version - retain + 1))
  }

  /**
   * One pass over the files of `listing` (the partition's changelogs, segments and manifests, listed
   * once: each LIST is a request on an object store).
   */
  def run(version: Long, oldestRetained: Long, committedId: Long => Option[String],
      listing: CheckpointListing = reader.listing()): (Seq[Finding], PartitionCheck) = {
    val CheckpointListing(changelogs, segments, snapshots) = listing
    val damagedLogs = changelogs.flatMap(e => attempt(e.path)(drain(reader.readChangelog(e.version, e.id).records))) ++
      segments.flatMap(e => segmentParts(e).flatMap { case (id, k) => attempt(e.path)(drain(reader.readSegment(e.version, id, k).records)) })
    val (damagedSnapshots, unusable, referenced) = checkSnapshots(snapshots)
    val damaged = (damagedLogs ++ damagedSnapshots).toMap
    val usable = listing.snapshotIds -- unusable
    val versions = (oldestRetained to version).filter(_ >= 1)
    val unloadable = versions.flatMap(v => load(v, oldestRetained, committedId(v), damaged, usable, listing))
    val stored = reader.storedFiles()
    val findings = findingsOf(damaged, unloadable, version)
    val read = changelogs.size + segments.size + snapshots.size + referenced.size
    val check = PartitionCheck(label, number, reader.root.toString, read, stored.filter(s => referenced(s.getPath.getName))
      .map(_.getLen).sum, versions.headOption.getOrElse(version), version, versions.size - unloadable.size,
      stored.count(s => !referenced(s.getPath.getName)), None)
    (findings, check)
  }

  private def drain(records: Iterator[_]): Unit = records.foreach(_ => ())

  /** Runs one file's read; the file and the damage when it fails. */
  private def attempt(path: Path)(read: => Unit): Option[(Path, String)] = {
    progress.fileRead()
    try { read; None }
    catch {
      case e: CheckpointFileException => Some(e.path -> e.getMessage)
      case NonFatal(e) => Some(path -> s"it cannot be read: $e")
    }
  }

  /** `<v>_<id>-<k>.txseg`: the id and k of an early-commit segment. */
  private def segmentParts(e: CheckpointEntry): Option[(String, Int)] = e.id.flatMap { idAndK =>
    val dash = idAndK.lastIndexOf('-')
    if (dash < 0) None else scala.util.Try(idAndK.substring(dash + 1).toInt).toOption.map(k => (idAndK.substring(0, dash), k))
  }

  /**
   * Every manifest and the stored files it lists: the damaged files, the snapshots a load cannot
   * restore, and the names of the stored files some readable manifest references.
   */
  private def checkSnapshots(snapshots: Seq[CheckpointEntry]): (Seq[(Path, String)], Set[(Long, String)], Set[String]) = {
    val verified = scala.collection.mutable.Map.empty[String, Option[(Path, String)]]
    def stored(file: SnapshotFile): Option[(Path, String)] =
      verified.getOrElseUpdate(file.storedName, attempt(new Path(reader.root, s"sst/${file.storedName}"))(reader.verifyStored(file)))
    val results = snapshots.flatMap(e => e.id.map(id => (e, id))).map { case (e, id) =>
      progress.fileRead()
      try {
        val manifest = reader.readManifest(e.version, id)
        val bad = manifest.files.flatMap(stored)
        (bad, if (bad.isEmpty) None else Some(e.version -> id), manifest.files.map(_.storedName))
      } catch {
        case ex: CheckpointFileException => (Seq(ex.path -> ex.getMessage), Some(e.version -> id), Nil)
      }
    }
    (results.flatMap(_._1).distinct, results.flatMap(_._2).toSet, results.flatMap(_._3).toSet)
  }

  /**
   * Why `version` cannot load, if it cannot: the rebuild's walk, then each changelog of its chain. A
   * changelog missing below the retained versions was cleaned up legitimately only under a snapshot.
   */
  private def load(version: Long, oldestRetained: Long, committedId: Option[String], damaged: Map[Path, String],
      usable: Set[(Long, String)], listing: CheckpointListing): Option[Unloadable] =
    try {
      val id = partition.checkpointId(version, committedId)
      partition.walk(version, id, usable) match {
        case Left(ChainBreak(Some(missing), _))
            if versionOf(missing) < oldestRetained && !partition.exists(missing) && missingSnapshot(missing, listing).isDefined =>
          Some(Unloadable(version, missingSnapshot(missing, listing), s"this snapshot manifest or the changelog $missing is " +
            s"missing: version ${versionOf(missing) + 1} has no snapshot and the changelog below it is gone (cleanup " +
            "deletes changelogs only below a snapshot, so the manifest was most likely deleted)"))
        case Left(break) => Some(Unloadable(version, break.path, break.reason))
        case Right(LineageChain(headers, _, _)) =>
          headers.iterator.flatMap { h =>
            val own = reader.changelogPath(h.version, partition.idInName(h.checkpointId))
            own +: (1 to h.segments).map(k => reader.segmentPath(h.version, h.checkpointId, k))
          }.find(p => damaged.contains(p) || !partition.exists(p)).map { p =>
            Unloadable(version, Some(p), damaged.getOrElse(p, s"the file $p is missing"))
          }
      }
    } catch {
      case e: CheckpointFileException => Some(Unloadable(version, Some(e.path), e.getMessage))
      case NonFatal(e) => Some(Unloadable(version, None, e.getMessage))
    }

  private def versionOf(changelog: Path): Long = changelog.getName.takeWhile(_.isDigit).toLong

  /**
   * The manifest that must have been there when the changelog below a version is gone: cleanup
   * deletes changelogs only below a snapshot, so a missing `<k>` changelog under a kept `<k+1>`
   * one with no snapshot of `k+1` means that snapshot's manifest was lost (deleted by hand).
   */
  private def missingSnapshot(missingChangelog: Path, listing: CheckpointListing): Option[Path] = {
    val above = versionOf(missingChangelog) + 1
    val kept = listing.changelogs.filter(_.version == above)
    val ids = if (partition.idsInFileNames) kept.flatMap(_.id) else kept.map(_ => reader.readChangelogHeader(above, None).checkpointId)
    ids match {
      case Seq(id) if !listing.snapshots.exists(e => e.version == above) => Some(reader.snapshotPath(above, id))
      case _ => None
    }
  }

  private def findingsOf(damaged: Map[Path, String], unloadable: Seq[Unloadable], version: Long): Seq[Finding] = {
    val byFile = unloadable.groupBy(_.path)
    val files = (damaged.keys.toSeq.map(Some(_)) ++ byFile.keys).distinct
    files.map { path =>
      val broken = byFile.getOrElse(path, Nil).map(_.version).sorted
      val problem = path.flatMap(damaged.get).orElse(byFile.get(path).map(_.head.reason)).getOrElse("")
      Finding(label, Some(number), path.fold(reader.root.toString)(_.toString), problem,
        PartitionVerifier.consequence(broken, version, path.exists(isSnapshotFile)))
    }.sortBy(_.path)
  }

  private def isSnapshotFile(path: Path): Boolean =
    path.getParent.getName == "sst" || path.getName.endsWith(".snapshot") || path.getName.endsWith(".txsnapshot")
}

object PartitionVerifier {
  /** Passes over a partition whose files a running query keeps changing (each change is a maintenance round). */
  val attempts = 3

  /** What Spark does with a damaged file that breaks the loads of `broken` when a restart loads `version`. */
  def consequence(broken: Seq[Long], version: Long, snapshotFile: Boolean): String =
    if (broken.contains(version)) {
      s"the query fails at restart loading version $version (the state after batch ${version - 1})" +
        (if (broken.size > 1) s"; ${span(broken.filter(_ != version))} cannot load either" else "") +
        ". Restore the file from a backup, or restart the query from a new checkpoint."
    } else if (broken.nonEmpty) {
      s"only older versions are affected: the query restarts, but loading ${span(broken)} fails (a rollback " +
        s"to ${if (broken.size == 1) "it" else "one of them"}, or the state data source reading it)."
    } else if (snapshotFile) {
      "no retained version is lost: loads skip this snapshot and use an older one and the changelogs, and the " +
        "next snapshot replaces it."
    } else "no load of a retained version reads it now (a snapshot above it covers it, or it is off the committed " +
      "lineage); it matters if that snapshot becomes unusable."

  private def span(versions: Seq[Long]): String =
    if (versions.size == 1) s"version ${versions.head}" else s"versions ${versions.head} to ${versions.last}"
}
