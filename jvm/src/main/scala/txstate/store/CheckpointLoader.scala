package txstate.store

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

import txstate.checkpoint.{ChangelogHeader, CheckpointReader, Lineage, LineageChain, MissingChangelogException,
  SnapshotManifest}
import txstate.engine.{CommitPoint, EngineErrors, LocalStateException, TxEngine}

/**
 * Makes a local engine hold a version that the checkpoint files describe: by replaying the
 * changelogs it lacks, or by restoring a snapshot on the version's lineage and replaying the
 * rest (docs/ARCHITECTURE.md, "Load paths"). It only reads the checkpoint, so the writer
 * ([[StoreInstance]]) and read-only followers ([[FollowerReplica]]) share it. `restored` hears of
 * every snapshot restored.
 */
private[store] final class CheckpointLoader(engine: TxEngine, checkpoint: CheckpointReader, idsInFileNames: Boolean,
    label: String, restored: SnapshotManifest => Unit) {
  private val log = LoggerFactory.getLogger(classOf[CheckpointLoader])

  def idInName(id: String): Option[String] = if (idsInFileNames) Some(id) else None

  /** True when the commit point `p` is exactly `version` on the requested lineage. */
  def holds(p: CommitPoint, version: Long, checkpointId: Option[String]): Boolean =
    if (version == 0) p.version == 0 && p.checkpointId.isEmpty
    else p.version == version && p.checkpointId == Some(topCheckpointId(version, checkpointId))

  /** The checkpoint id of `version` on the requested lineage. */
  def topCheckpointId(version: Long, checkpointId: Option[String]): String =
    if (idsInFileNames) checkpointId.getOrElse(throw StoreErrors.missingCheckpointId(version, label))
    else checkpoint.readChangelogHeader(version, None).checkpointId

  def walkDown(version: Long, checkpointId: Option[String])(stop: (Long, Option[String]) => Boolean) =
    Lineage.walkDown(checkpoint, version, if (version == 0) None else Some(topCheckpointId(version, checkpointId)),
      idsInFileNames)(stop)

  /**
   * Replays only the missing changelogs when the local database is behind on the same lineage.
   * None (rebuild instead) for an empty local database, which a snapshot serves better, and when
   * the chain down to the local version is not there any more (cleaned up, or another lineage).
   */
  def catchUp(version: Long, checkpointId: Option[String]): Option[Int] = {
    val local = engine.committed
    if (engine.inFlight.isDefined || local.version >= version || local.checkpointId.isEmpty) None
    else {
      val walk =
        try walkDown(version, checkpointId)((level, _) => level <= local.version).toOption
        catch {
          case NonFatal(e) =>
            // The rebuild reads the same files and reports what is wrong with them.
            log.info(s"txstate: cannot catch $label up from version ${local.version} to $version, rebuilding: $e")
            None
        }
      val toReplay = walk.collect {
        case LineageChain(chain, level, id) if level == local.version && id == local.checkpointId => chain
      }
      toReplay.flatMap { chain =>
        // A cleanup that ran since the walk (another instance's maintenance, a provider Spark is
        // unloading) may have deleted changelogs of the chain below a newer snapshot: the
        // rebuild finds that snapshot. The local database is wiped or restored there anyway.
        try Some(replay(chain))
        catch {
          case e: MissingChangelogException =>
            log.info(s"txstate: a changelog $label was catching up through is gone (${e.path}), rebuilding")
            None
        }
      }
    }
  }

  /**
   * Rebuilds from the newest usable snapshot on the lineage, then its changelogs. A snapshot that
   * cannot be restored is skipped with a warning and an older one (or the chain's root) is used.
   * Returns the number of changelogs replayed.
   *
   * The snapshots are listed once per attempt, and a cleanup elsewhere may run during it: another
   * instance of the store (a provider Spark unloads after a query restart does its maintenance
   * first) uploads a snapshot and deletes the files below it, which this attempt's walk may still
   * need. So a failed attempt is made again, up to [[rebuildAttempts]] times, while snapshots have
   * appeared since its listing: the files a cleanup keeps are exactly those the newer snapshot
   * needs. A failure with no new snapshot is the checkpoint's, and is raised at once.
   */
  def rebuild(version: Long, checkpointId: Option[String]): Int = {
    @scala.annotation.tailrec
    def attempt(n: Int): Int = {
      val listed = checkpoint.snapshotIds()
      val outcome =
        try Right(rebuildFrom(version, checkpointId, listed, Set.empty))
        catch { case NonFatal(e) => Left(e) }
      outcome match {
        case Right(replayed) => replayed
        case Left(e) =>
          val appeared = checkpoint.snapshotIds() -- listed
          if (appeared.isEmpty || n >= CheckpointLoader.rebuildAttempts) throw e
          log.info(s"txstate: the rebuild of version $version of $label failed while snapshots of versions " +
            s"${appeared.toSeq.sorted.map(_._1).mkString(", ")} appeared (a cleanup elsewhere); trying again: " +
            e.getMessage)
          attempt(n + 1)
      }
    }
    attempt(1)
  }

  private def rebuildFrom(version: Long, checkpointId: Option[String], listed: Set[(Long, String)],
      unusable: Set[(Long, String)]): Int = {
    val available = listed -- unusable
    val walk =
      try walkDown(version, checkpointId)((level, id) => id.exists(i => available.contains((level, i))))
      catch { case NonFatal(e) => throw cannotRebuild(version, e.getMessage, e) }
    walk match {
      case Right(LineageChain(chain, level, None)) =>
        if (level == 0) engine.wipe() else engine.startEmptyAt(level)
        replay(chain)
      case Right(LineageChain(chain, level, Some(id))) =>
        val usable =
          try { restoreSnapshot(checkpoint.readManifest(level, id)); true }
          catch {
            case e: LocalStateException if e.errorCode == EngineErrors.newerRocksDbFilesCode =>
              // The newest version names its writer; when the snapshot is that version, its own changelog does.
              val writer = chain.sortBy(_.version).lastOption.map(_.writtenBy)
                .orElse(scala.util.Try(checkpoint.readChangelogHeader(level, idInName(id)).writtenBy).toOption)
              throw StoreErrors.writtenByNewerLine(version, label, checkpoint.root, level, writer, e)
            case NonFatal(e) =>
              log.warn(s"txstate: snapshot of version $level of $label is unusable, falling back to an older one: " +
                e.getMessage)
              false
          }
        if (usable) replay(chain) else rebuildFrom(version, checkpointId, listed, unusable + ((level, id)))
      case Left(link) =>
        throw cannotRebuild(version, s"its changelogs do not form one chain back to a snapshot or an empty store " +
          s"($link); the checkpoint is damaged or mixes files of two queries")
    }
  }

  /** Restores the snapshot of `snapshotVersion` on the lineage of `version`, then replays up to `version`. */
  def fromSnapshot(snapshotVersion: Long, version: Long, checkpointId: Option[String]): Int = {
    val chain = walkDown(version, checkpointId)((level, _) => level <= snapshotVersion) match {
      case Right(c @ LineageChain(_, `snapshotVersion`, Some(_))) => c
      case other => throw cannotRebuild(version, s"no chain of changelogs leads back to version $snapshotVersion" +
        other.left.toOption.fold("")(link => s" ($link)"))
    }
    val id = chain.levelId.get
    if (!checkpoint.snapshots().exists(e => e.version == snapshotVersion && e.id.contains(id))) {
      throw cannotRebuild(version, s"there is no snapshot of version $snapshotVersion on its lineage " +
        s"(expected ${checkpoint.snapshotPath(snapshotVersion, id)})")
    }
    restoreSnapshot(checkpoint.readManifest(snapshotVersion, id))
    replay(chain.headers)
  }

  def cannotRebuild(version: Long, why: String, cause: Throwable = null): StoreException =
    StoreErrors.cannotRebuild(version, label, checkpoint.root, why, cause)

  private def restoreSnapshot(manifest: SnapshotManifest): Unit = {
    val point = engine.restore(dir => manifest.files.foreach(f => checkpoint.download(f, new java.io.File(dir, f.localName))))
    if (point.version != manifest.version || !point.checkpointId.contains(manifest.checkpointId)) {
      engine.wipe()
      throw StoreErrors.snapshotMismatch(checkpoint.snapshotPath(manifest.version, manifest.checkpointId),
        s"version ${point.version} (${point.checkpointId.getOrElse("no id")})")
    }
    restored(manifest)
  }

  def replay(chain: List[ChangelogHeader]): Int = {
    chain.foreach { h =>
      engine.replay(checkpoint.readVersionChanges(h, idInName(h.checkpointId)), h.commitPoint)
    }
    chain.size
  }
}

private[store] object CheckpointLoader {
  /** Attempts of one rebuild while cleanups elsewhere keep moving its snapshots (each one is rare). */
  val rebuildAttempts = 3
}
