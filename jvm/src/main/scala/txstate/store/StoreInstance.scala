package txstate.store

import java.io.File
import java.util.UUID

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

import txstate.checkpoint.{ChangelogHeader, SnapshotManifest, StoreCheckpoint}
import txstate.engine.{ChangeRecord, CommitPoint, CommittedView, EngineOptions, Transaction, TxEngine}

/**
 * One store instance: the local transactional engine plus its checkpoint files. It makes a
 * requested version current (reuse, roll back, catch up, or rebuild) and commits transactions
 * durably (changelog first, then the atomic local write).
 *
 * Lineage: every commit gets a fresh changelog id; each changelog names the id it was built on.
 * The local commit point is trusted only if the checkpoint's changelog for that version carries
 * the same id, so a batch that was re-run elsewhere (which rewrites `<v>.txlog` under checkpoint
 * format v1) is never mistaken for ours. Under format v2 the ids are in the file names and Spark
 * names the id to load. Snapshots carry the id of the version they hold, too.
 *
 * Task-facing methods are called by one task at a time (the provider's lock); `uploadSnapshot`
 * and `cleanup` run on Spark's maintenance threads and only touch checkpoint files.
 */
final class StoreInstance(
    localDir: File,
    val checkpoint: StoreCheckpoint,
    engineOptions: EngineOptions,
    idsInFileNames: Boolean,
    snapshotInterval: Int,
    describe: String) extends AutoCloseable {

  private val log = LoggerFactory.getLogger(classOf[StoreInstance])
  private val engine = TxEngine.open(localDir, engineOptions)
  private val snapshots = new SnapshotStager(new File(localDir.getParentFile, localDir.getName + ".staging"), checkpoint)
  private val maintenanceLock = new Object

  /** The open transaction's changelog id and segments, once it has spilled. */
  private final case class OpenAttempt(tx: Transaction, changelogId: String, segments: Int)
  private var openAttempt: Option[OpenAttempt] = None
  // Where the last lineage walk found a broken link, for error messages.
  private var brokenLink: Option[String] = None

  def committed: CommitPoint = engine.committed

  /** The newest snapshot this instance uploaded or restored from (0: none). */
  @volatile private var newestSnapshotVersion = 0L
  def newestSnapshot: Long = newestSnapshotVersion
  def nativeMemoryUsed: Long = engine.nativeMemoryUsed

  /** Runs `read` against the last committed version, from any thread (see [[TxEngine.readCommittedView]]). */
  def readCommitted[T](waitMs: Long)(read: CommittedView => T): Option[T] = engine.readCommittedView(waitMs)(read)

  /**
   * Makes `version` current. `checkpointId` is the id Spark names under checkpoint format v2;
   * under v1 it is None and the checkpoint's own `<version>.txlog` decides.
   */
  def load(version: Long, checkpointId: Option[String]): LoadReport = {
    require(version >= 0, s"txstate: cannot load negative version $version of $describe")
    val start = System.nanoTime()
    val local = engine.committed
    val clean = engine.inFlight.isEmpty
    val (path, replayed) =
      if (clean && local.version == version && holds(local, version, checkpointId)) (LoadPath.Reused, 0)
      else if (clean && engine.committedBeforeLastCommit.exists(holds(_, version, checkpointId))) {
        engine.rollbackLastCommit()
        (LoadPath.RolledBack, 0)
      } else {
        catchUp(local, version, checkpointId) match {
          case Some(n) => (LoadPath.CaughtUp, n)
          case None => rebuild(version, checkpointId, Set.empty)
        }
      }
    val report = LoadReport(version, path, replayed, (System.nanoTime() - start) / 1000000)
    if (path != LoadPath.Reused) log.info(s"txstate: loaded version $version of $describe: $report")
    report
  }

  /** Makes an empty store current at `version`; its next commit starts a new lineage. */
  def loadEmpty(version: Long): LoadReport = {
    val start = System.nanoTime()
    engine.startEmptyAt(version)
    LoadReport(version, LoadPath.Rebuilt, 0, (System.nanoTime() - start) / 1000000)
  }

  def begin(): Transaction = {
    openAttempt = None
    engine.begin()
  }

  /**
   * Early commit: makes the buffered writes durable as the next segment of the open version, then
   * moves them into the local database (in flight), so the buffer starts empty again. Returns
   * None, doing nothing, while the transaction has an open iterator (spilling would hide buffered
   * rows from it); the next write past the limit tries again.
   */
  def spill(tx: Transaction): Option[SpillReport] =
    if (tx.hasOpenIterators || tx.isEmpty) None
    else {
      val start = System.nanoTime()
      val attempt = openAttempt.filter(_.tx eq tx).getOrElse(OpenAttempt(tx, UUID.randomUUID().toString, 0))
      val k = attempt.segments + 1
      val entries = tx.uncommittedEntries
      val header = ChangelogHeader(tx.base.version + 1, attempt.changelogId, tx.base.checkpointId, tx.numKeys,
        System.currentTimeMillis(), segments = k)
      val bytes = checkpoint.writeSegment(header, k, tx.changes)
      engine.spill(tx)
      openAttempt = Some(attempt.copy(segments = k))
      Some(SpillReport(entries, bytes, (System.nanoTime() - start) / 1000000))
    }

  /** Drops the transaction: the buffer, and every sub-batch it spilled (undone from the pre-version view). */
  def abort(tx: Transaction): Unit = {
    openAttempt.filter(a => (a.tx eq tx) && engine.hasSpilled(tx)).foreach { a =>
      val version = tx.base.version + 1
      engine.undoSpill(tx, (1 to a.segments).iterator.flatMap(k => checkpoint.readSegment(version, a.changelogId, k).records))
    }
    openAttempt = None
    tx.discard()
  }

  /**
   * The changes committed in versions `startVersion` to `endVersion` on the requested lineage, in
   * commit order, each with its version. Reads checkpoint files only; the local database is untouched.
   */
  def changesBetween(startVersion: Long, endVersion: Long, endCheckpointId: Option[String])
      : Iterator[(Long, ChangeRecord)] = {
    require(startVersion >= 1 && startVersion <= endVersion,
      s"txstate: invalid change range $startVersion..$endVersion for $describe")
    val chain = walkDown(endVersion, endCheckpointId, (level, _) => level < startVersion) match {
      case Some((headers, level, _)) if level == startVersion - 1 => headers
      case _ => throw cannotRebuild(endVersion, s"its changelogs from version $startVersion do not form one chain", null)
    }
    chain.iterator.flatMap(h => checkpoint.readVersionChanges(h, fileId(Some(h.changelogId))).map(r => (h.version, r)))
  }

  /**
   * Loads `endVersion` starting from the snapshot of `snapshotVersion` (Spark's state data source
   * with `snapshotStartBatchId`): the snapshot must exist on the lineage; no newer snapshot is used.
   */
  def loadFromSnapshot(snapshotVersion: Long, endVersion: Long, endCheckpointId: Option[String]): LoadReport = {
    val start = System.nanoTime()
    val (chain, id) = walkDown(endVersion, endCheckpointId, (level, _) => level <= snapshotVersion) match {
      case Some((headers, level, Some(i))) if level == snapshotVersion => (headers, i)
      case _ => throw cannotRebuild(endVersion, s"no chain of changelogs leads back to version $snapshotVersion", null)
    }
    if (!checkpoint.snapshots().exists(e => e.version == snapshotVersion && e.id.contains(id))) {
      throw cannotRebuild(endVersion, s"there is no snapshot of version $snapshotVersion on its lineage " +
        s"(expected ${checkpoint.snapshotPath(snapshotVersion, id)})", null)
    }
    restoreSnapshot(checkpoint.readManifest(snapshotVersion, id))
    val replayed = replay(chain)
    LoadReport(endVersion, LoadPath.Rebuilt, replayed, (System.nanoTime() - start) / 1000000)
  }

  /**
   * Makes the transaction durable as version `base + 1`: changelog on the checkpoint, then the
   * local commit. Every `snapshotInterval` versions (or when `forceSnapshot`) it also stages a
   * local snapshot for the next `uploadSnapshot`.
   */
  def commit(tx: Transaction, forceSnapshot: Boolean = false): CommitReport = {
    val start = System.nanoTime()
    val newVersion = tx.base.version + 1
    val attempt = openAttempt.filter(_.tx eq tx)
    val id = attempt.fold(UUID.randomUUID().toString)(_.changelogId)
    val now = System.currentTimeMillis()
    val header = ChangelogHeader(newVersion, id, tx.base.checkpointId, tx.numKeys, now, attempt.fold(0)(_.segments))
    val bytes = checkpoint.writeChangelog(header, fileId(Some(id)), tx.changes)
    engine.commit(tx, CommitPoint(newVersion, Some(id), CommitPoint.currentFormatVersion, now, tx.numKeys))
    openAttempt = None
    if (forceSnapshot || newVersion % snapshotInterval == 0) snapshots.stage(engine)
    CommitReport(newVersion, bytes, (System.nanoTime() - start) / 1000000)
  }

  /** Uploads the newest staged snapshot, off the commit path. */
  def uploadSnapshot(): Option[SnapshotReport] = maintenanceLock.synchronized {
    snapshots.upload().map { case (manifest, report) =>
      newestSnapshotVersion = math.max(newestSnapshotVersion, manifest.version)
      log.info(s"txstate: uploaded snapshot of version ${manifest.version} of $describe: $report")
      report
    }
  }

  /**
   * Deletes checkpoint files no retained version needs: every version from
   * `latest - minVersionsToRetain + 1` on stays loadable (Spark's state data source reads batch X
   * through version X + 1, so this keeps minBatchesToRetain batches readable).
   */
  def cleanup(minVersionsToRetain: Int, storedFileGraceMs: Long): Option[CleanupReport] =
    maintenanceLock.synchronized(Cleanup.run(checkpoint, idsInFileNames, minVersionsToRetain, storedFileGraceMs, describe))

  def close(): Unit = {
    try engine.close()
    finally snapshots.close()
  }

  private def fileId(id: Option[String]): Option[String] = if (idsInFileNames) id else None

  /** True when the commit point `p` is exactly `version` on the requested lineage. */
  private def holds(p: CommitPoint, version: Long, checkpointId: Option[String]): Boolean =
    if (version == 0) p.version == 0 && p.checkpointId.isEmpty
    else p.version == version && p.checkpointId == Some(topChangelogId(version, checkpointId))

  /** The changelog id of `version` on the requested lineage. */
  private def topChangelogId(version: Long, checkpointId: Option[String]): String =
    if (idsInFileNames) checkpointId.getOrElse(missingId(version))
    else checkpoint.readChangelogHeader(version, None).changelogId

  private def missingId(version: Long): Nothing =
    throw new IllegalStateException(
      s"txstate: Spark asked for version $version of $describe under checkpoint format v2 without a checkpoint id")

  /**
   * Walks the lineage down from `version`, one changelog header at a time, until `stop(level, id)`
   * holds or the chain reaches its root (a changelog built on an empty store). Returns the headers
   * above the stopping level, oldest first, with that level and its changelog id (None = empty
   * store); None when a link is broken (a changelog is not the one its successor was built on).
   */
  private def walkDown(version: Long, checkpointId: Option[String], stop: (Long, Option[String]) => Boolean)
      : Option[(List[ChangelogHeader], Long, Option[String])] = {
    var chain = List.empty[ChangelogHeader]
    var level = version
    var expected: Option[String] = if (version == 0) None else Some(topChangelogId(version, checkpointId))
    var result: Option[Option[(List[ChangelogHeader], Long, Option[String])]] = None
    brokenLink = None
    while (result.isEmpty) {
      if (stop(level, expected) || expected.isEmpty) result = Some(Some((chain, level, expected)))
      else if (level == 0) result = Some(None)
      else {
        val header = checkpoint.readChangelogHeader(level, fileId(expected))
        if (header.version != level) {
          throw new IllegalStateException(
            s"txstate: changelog ${checkpoint.changelogPath(level, fileId(expected))} of $describe says it is " +
              s"version ${header.version}, not $level")
        }
        if (!expected.contains(header.changelogId)) {
          // A damaged header reads as a broken link: the full read (checksummed) names the file.
          checkpoint.readChangelog(level, fileId(expected))
          brokenLink = Some(s"${checkpoint.changelogPath(level, fileId(expected))} has changelog id " +
            s"${header.changelogId}, but the version above it was built on ${expected.getOrElse("an empty store")}")
          result = Some(None)
        }
        else {
          chain ::= header
          expected = header.baseChangelogId
          level -= 1
        }
      }
    }
    result.get
  }

  /**
   * Replays only the missing changelogs when the local database is behind on the same lineage.
   * None (rebuild instead) for an empty local database, which a snapshot serves better, and when
   * the chain down to the local version is not there any more (cleaned up, or another lineage).
   */
  private def catchUp(local: CommitPoint, version: Long, checkpointId: Option[String]): Option[Int] =
    if (engine.inFlight.isDefined || local.version >= version || local.checkpointId.isEmpty) None
    else {
      val walk =
        try walkDown(version, checkpointId, (level, _) => level <= local.version)
        catch { case NonFatal(_) => None } // rebuild reads the same files and reports what is wrong
      walk.collect { case (chain, level, id) if level == local.version && id == local.checkpointId => replay(chain) }
    }

  /**
   * Rebuilds from the newest usable snapshot on the lineage, then its changelogs. A snapshot that
   * cannot be restored is skipped with a warning and an older one (or the chain's root) is used.
   */
  private def rebuild(version: Long, checkpointId: Option[String], unusable: Set[(Long, String)]): (LoadPath, Int) = {
    val available = checkpoint.snapshots().flatMap(e => e.id.map(id => (e.version, id))).toSet -- unusable
    val walk =
      try walkDown(version, checkpointId, (level, id) => id.exists(i => available.contains((level, i))))
      catch { case NonFatal(e) => throw cannotRebuild(version, e.getMessage, e) }
    walk match {
      case Some((chain, level, None)) =>
        if (level == 0) engine.wipe() else engine.startEmptyAt(level)
        (LoadPath.Rebuilt, replay(chain))
      case Some((chain, level, Some(id))) =>
        try restoreSnapshot(checkpoint.readManifest(level, id))
        catch {
          case NonFatal(e) =>
            log.warn(s"txstate: snapshot of version $level of $describe is unusable, falling back to an older one: " +
              e.getMessage)
            return rebuild(version, checkpointId, unusable + ((level, id)))
        }
        (LoadPath.Rebuilt, replay(chain))
      case None =>
        throw cannotRebuild(version, "its changelogs do not form one chain back to a snapshot or an empty store" +
          brokenLink.fold("")(link => s" ($link)") + "; the checkpoint is damaged or mixes files of two queries", null)
    }
  }

  private def restoreSnapshot(manifest: SnapshotManifest): Unit = {
    val point = engine.restore(dir => manifest.files.foreach(f => checkpoint.download(f, new File(dir, f.localName))))
    if (point.version != manifest.version || !point.checkpointId.contains(manifest.changelogId)) {
      engine.wipe()
      throw new IllegalStateException(
        s"txstate: snapshot ${checkpoint.snapshotPath(manifest.version, manifest.changelogId)} holds version " +
          s"${point.version} (${point.checkpointId.getOrElse("no id")}), not what its manifest says")
    }
    snapshots.adopt(engine.incarnation, manifest)
    newestSnapshotVersion = manifest.version
  }

  private def cannotRebuild(version: Long, why: String, cause: Throwable): IllegalStateException =
    new IllegalStateException(s"txstate: cannot rebuild version $version of $describe from ${checkpoint.root}: $why",
      cause)

  private def replay(chain: List[ChangelogHeader]): Int = {
    chain.foreach { h =>
      engine.replay(checkpoint.readVersionChanges(h, fileId(Some(h.changelogId))),
        CommitPoint(h.version, Some(h.changelogId), CommitPoint.currentFormatVersion, h.commitTimeMs, h.numKeys))
    }
    chain.size
  }
}
