package txstate.store

import java.util.UUID
import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong, AtomicReference}

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.slf4j.LoggerFactory

import txstate.checkpoint.{ChangelogHeader, StoreCheckpoint, WrittenChangelog}
import txstate.engine.{CacheStats, ChangeRecord, CommitPoint, CommittedView, EngineErrors, HeapMemoryBudget,
  HotStateCache, LocalStateException, NativeMemoryBudget, Transaction, TxEngine}

/**
 * One store instance, and the single owner of everything it is made of: the local transactional
 * engine, the checkpoint files, the local directory and the snapshot staging area. It makes a
 * requested version current (reuse, roll back, catch up, or rebuild), hands out one
 * [[StoreBatch]] at a time, and commits batches durably (changelog first, then the atomic local
 * write). See docs/ARCHITECTURE.md, "The life of a micro-batch" and "Load paths".
 *
 * Lineage: every commit gets a fresh checkpoint id; each changelog names the id it was built on.
 * The local commit point is trusted only if the checkpoint's changelog for that version carries
 * the same id, so a batch that was re-run elsewhere (which rewrites `<v>.txlog` under checkpoint
 * format v1) is never mistaken for ours. Under format v2 the ids are in the file names and Spark
 * names the id to load. Snapshots carry the id of the version they hold, too.
 *
 * Lifecycle: `close()` never closes native state under a live batch: while one is open the close
 * is deferred until the batch ends. Maintenance (`uploadSnapshot`, `cleanup`, on Spark's
 * maintenance threads) and close exclude each other; maintenance after close does nothing. The
 * maintenance of other instances of the same store in this JVM waits too
 * ([[CheckpointMaintenanceLocks]]).
 */
final class StoreInstance private (
    local: LocalDirectory,
    checkpoint: StoreCheckpoint,
    engine: TxEngine,
    snapshots: SnapshotStager,
    options: StoreOptions,
    val label: String) extends AutoCloseable {
  import StoreInstance._

  private val log = LoggerFactory.getLogger(classOf[StoreInstance])
  private val maintenanceLock = new Object
  private val lifecycle = new Object
  private var state: Lifecycle = Idle // guarded by `lifecycle`
  @volatile private var closed = false
  @volatile private var newestSnapshotVersion = 0L
  // Commits this instance made, and what the last cleanup round saw (maintenance threads only).
  private val commitsMade = new AtomicLong()
  // Whether a load has run yet: a new provider's first load is watched for another instance's
  // maintenance beside it (CheckpointMaintenanceLocks.loading); later ones cost nothing extra.
  private val loaded = new AtomicBoolean(false)
  private var lastCleanupSaw: Option[(Long, Long)] = None
  // The retention this instance recorded (guarded by maintenanceLock, like lastCleanupSaw).
  private var retentionRecorded: Option[Int] = None
  private val snapshotActivity = new AtomicReference(SnapshotActivity.none)
  // The changelog of this instance's newest commit (batch threads only, one at a time).
  @volatile private var ownChangelog: Option[WrittenChangelog] = None
  private val loader = new CheckpointLoader(engine, checkpoint, options.idsInFileNames, label, { manifest =>
    snapshots.adopt(engine.incarnation, manifest)
    newestSnapshotVersion = manifest.version
  })

  def committed: CommitPoint = engine.committed
  def isClosed: Boolean = closed

  /** The newest snapshot this instance uploaded or restored from (0: none). */
  def newestSnapshot: Long = newestSnapshotVersion

  /** Versions committed since the newest snapshot. */
  def snapshotLag: Long = math.max(engine.committed.version - newestSnapshotVersion, 0L)

  def nativeMemoryUsed: Long = engine.nativeMemoryUsed

  /** Live memtable bytes of the local database, as RocksDB counts them. */
  def memtableBytes: Long = engine.memtableBytes

  /** What this instance's part of the executor's hot-state cache did since it opened. */
  def cacheStats: CacheStats = engine.cacheStats

  /** Undo of this instance's last commits the heap budget gave up since the last call (reported by the next committed batch). */
  def drainUndoDropped(): Long = {
    val dropped = engine.drainUndoDropped()
    ExecutorStores.undoDropped(dropped)
    dropped
  }

  /** Snapshot uploads since the last call (reported by the next committed batch). */
  def drainSnapshotActivity(): SnapshotActivity = snapshotActivity.getAndSet(SnapshotActivity.none)

  /** Runs `read` against the last committed version, from any thread (see [[TxEngine.readCommittedView]]). */
  def readCommittedView[T](waitMs: Long)(read: CommittedView => T): Option[T] = engine.readCommittedView(waitMs)(read)

  /** Makes the requested version current and opens a batch on it; the instance is busy until the batch ends. */
  def openBatch(request: LoadRequest, clock: BatchClock = BatchClock.untimed): StoreBatch =
    busyUntilBatchEnds(newBatch(loadNow(request), clock))

  /** Makes `version` current without opening a batch. */
  def load(version: Long, checkpointId: Option[String]): LoadReport = {
    enter()
    try loadNow(LoadRequest.AtVersion(version, checkpointId))
    finally batchEnded()
  }

  /** A batch on the version that is current now, loading nothing. */
  def begin(clock: BatchClock = BatchClock.untimed): StoreBatch =
    busyUntilBatchEnds(newBatch(LoadReport(committed.version, LoadPath.Reused, changelogsReplayed = 0, durationMs = 0), clock))

  /** The oldest write time of the rows TTL applies to, while TTL is on (see [[TxEngine.oldestWriteMs]]). */
  def oldestWriteMs(applies: Array[Byte] => Boolean): Option[Long] = engine.oldestWriteMs(applies)

  /**
   * The changes committed in versions `startVersion` to `endVersion` on the requested lineage, in
   * commit order, each with its version. Reads checkpoint files only; the local database is untouched.
   */
  def changesBetween(startVersion: Long, endVersion: Long, endCheckpointId: Option[String])
      : Iterator[(Long, ChangeRecord)] = {
    if (startVersion < 1 || startVersion > endVersion) throw StoreErrors.invalidChangeRange(startVersion, endVersion, label)
    val chain = walkDown(endVersion, endCheckpointId)((level, _) => level < startVersion) match {
      case Right(c) if c.level == startVersion - 1 => c.headers
      case other => throw cannotRebuild(endVersion, s"its changelogs from version $startVersion do not form one chain" +
        other.left.toOption.fold("")(link => s" ($link)"))
    }
    chain.iterator.flatMap(h => checkpoint.readVersionChanges(h, idInName(h.checkpointId)).map(r => (h.version, r)))
  }

  /** Uploads the newest staged snapshot, off the commit path (a maintenance thread). */
  def uploadSnapshot(): Option[SnapshotReport] = maintenanceLock.synchronized {
    if (closed) None
    else CheckpointMaintenanceLocks.holding(checkpoint.root, this)(snapshots.upload()).map { case (manifest, report) =>
      newestSnapshotVersion = math.max(newestSnapshotVersion, manifest.version)
      snapshotActivity.accumulateAndGet(SnapshotActivity.of(report), _ + _)
      log.info(s"txstate: uploaded snapshot of version ${manifest.version} of $label: $report")
      report
    }
  }

  /**
   * Deletes checkpoint files no retained version needs: every version from
   * `latest - minVersionsToRetain + 1` on stays loadable (Spark's state data source reads batch X
   * through version X + 1, so this keeps minBatchesToRetain batches readable).
   */
  def cleanup(minVersionsToRetain: Int, storedFileGraceMs: Long): Unit = maintenanceLock.synchronized {
    // A round with no commit and no upload since the last one would list and read the same files
    // and delete nothing new, and on an object store every list and read is a billed request.
    // Files only time makes deletable (a killed writer's temporary file, an orphan past its grace
    // period) wait for the round after the next commit.
    val seen = (commitsMade.get, newestSnapshotVersion)
    if (!closed && !lastCleanupSaw.contains(seen)) {
      CheckpointMaintenanceLocks.holding(checkpoint.root, this) {
        Cleanup.run(checkpoint, options.idsInFileNames, minVersionsToRetain, storedFileGraceMs, label, recordRetention)
      }
      lastCleanupSaw = Some(seen)
    }
  }

  /** Writes the retention record once per instance and value: a round that deletes versions costs no extra write. */
  private def recordRetention(retained: Int): Unit = if (!retentionRecorded.contains(retained)) {
    checkpoint.writeRetention(retained)
    retentionRecorded = Some(retained)
  }

  /**
   * Closes the instance now, or, while a batch is open, as soon as it ends. Waits for running
   * maintenance. Idempotent.
   */
  def close(): Unit = lifecycle.synchronized {
    state match {
      case Idle => closeNow()
      case Busy =>
        log.warn(s"txstate: $label is asked to close while a batch is open; it closes when that batch ends")
        state = CloseWhenIdle
      case CloseWhenIdle | Closed => ()
    }
  }

  // ---- what batches call --------------------------------------------------------------------

  private[store] def earlyCommit(tx: Transaction, attempt: Option[EarlyCommitAttempt])
      : (EarlyCommitAttempt, EarlyCommitReport) = {
    val start = System.nanoTime()
    val current = attempt.getOrElse(EarlyCommitAttempt(UUID.randomUUID().toString, 0))
    val k = current.segments + 1
    val entries = tx.uncommittedEntries
    val header = ChangelogHeader.of(pointOf(tx, current.checkpointId), tx.base.checkpointId, segments = k)
    val bytes = checkpoint.writeSegment(header, k, tx.changeSource)
    engine.earlyCommit(tx)
    ExecutorStores.earlyCommitted()
    (current.copy(segments = k), EarlyCommitReport(entries, bytes, millisSince(start)))
  }

  private[store] def commit(tx: Transaction, attempt: Option[EarlyCommitAttempt], forceSnapshot: Boolean): CommitReport = {
    val start = System.nanoTime()
    val point = pointOf(tx, attempt.fold(UUID.randomUUID().toString)(_.checkpointId))
    val header = ChangelogHeader.of(point, tx.base.checkpointId, attempt.fold(0)(_.segments))
    ownChangelog = None
    val written = checkpoint.writeOwnChangelog(header, idInName(header.checkpointId), tx.changeSource)
    engine.commit(tx, point)
    ownChangelog = Some(written)
    commitsMade.incrementAndGet()
    if (forceSnapshot || point.version % options.snapshotInterval == 0) stageSnapshot(point.version)
    CommitReport(point, written.bytes, millisSince(start))
  }

  /** The commit point `tx` makes as `checkpointId`: this build's storage format, the batch's stamp and TTL index. */
  private def pointOf(tx: Transaction, checkpointId: String): CommitPoint =
    CommitPoint(tx.base.version + 1, Some(checkpointId), options.engine.formatVersion, System.currentTimeMillis(),
      tx.numKeys, tx.stamp, tx.timeIndexSinceMs)

  /**
   * The version is durable and committed already: a snapshot that cannot be staged must not fail
   * the commit (changelogs keep every version loadable); the next interval tries again.
   */
  private def stageSnapshot(version: Long): Unit =
    try snapshots.stage(engine)
    catch { case NonFatal(e) => log.warn(s"txstate: could not stage a snapshot of version $version of $label", e) }

  private[store] def abort(tx: Transaction, attempt: Option[EarlyCommitAttempt]): Unit = {
    try attempt.filter(_.segments > 0).foreach(a =>
      engine.undoEarlyCommits(checkpoint.readSegments(tx.base.version + 1, a.checkpointId, a.segments)))
    finally tx.discard()
  }

  /** The open batch (or load) ended: a close asked for meanwhile happens now. */
  private[store] def batchEnded(): Unit = lifecycle.synchronized {
    state match {
      case Busy => state = Idle
      case CloseWhenIdle => closeNow()
      case Idle | Closed => ()
    }
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  private def busyUntilBatchEnds(open: => StoreBatch): StoreBatch = {
    enter()
    try open
    catch {
      case e: Throwable =>
        batchEnded()
        throw e
    }
  }

  private def newBatch(loaded: LoadReport, clock: BatchClock): StoreBatch =
    new StoreBatch(this, engine.begin(clock.stamp, clock.ttl), loaded, options.limits, clock.ttl)

  private def enter(): Unit = lifecycle.synchronized {
    state match {
      case Idle => state = Busy
      case Busy => throw StoreErrors.busy(label)
      case CloseWhenIdle | Closed => throw StoreErrors.closed(label)
    }
  }

  /** Closes every part, each exactly once, even when an earlier one fails (the first failure is rethrown). */
  private def closeNow(): Unit = maintenanceLock.synchronized {
    state = Closed
    closed = true
    ExecutorStores.closed(this)
    val failures = Seq[(String, () => Unit)](
      "the local engine" -> (() => engine.closeReportingDroppedFlush().foreach(dropped => log.warn(s"txstate: $label dropped the " +
        "unflushed writes of its local database on closing it (its versions are in the checkpoint, and the next " +
        "open of the directory replays them)", dropped))),
      "the snapshot staging area" -> (() => snapshots.close()),
      "the checkpoint file manager" -> (() => checkpoint.close()),
      s"the local directory ${local.dir}" -> (() => local.release())).flatMap { case (part, close) =>
      try { close(); None }
      catch {
        case NonFatal(e) =>
          log.warn(s"txstate: closing $part of $label failed", e)
          Some(e)
      }
    }
    failures.headOption.foreach { first =>
      failures.tail.foreach(first.addSuppressed)
      throw first
    }
  }

  // ---- loading ------------------------------------------------------------------------------

  private def loadNow(request: LoadRequest): LoadReport = {
    if (request.version < 0) throw StoreErrors.negativeVersion(request.version, label)
    val start = System.nanoTime()
    // A write RocksDB refused (a full disk) leaves a handle that may refuse every later one: the
    // database is reopened at the last commit point on disk, and the load below catches up from there.
    if (engine.needsReopen) {
      log.warn(s"txstate: reopening the local database of $label after a failed write")
      engine.reopenAfterFailedWrite().foreach(dropped => log.warn(s"txstate: $label dropped the unflushed writes " +
        "of its local database on reopening it (its versions are in the checkpoint and are replayed)", dropped))
    }
    def load() = request match {
      case LoadRequest.AtVersion(version, checkpointId) => loadVersion(version, checkpointId)
      case LoadRequest.Empty(version) =>
        engine.startEmptyAt(version)
        (LoadPath.StartedEmpty, 0)
      case LoadRequest.FromSnapshot(snapshotVersion, version, checkpointId) =>
        (LoadPath.Rebuilt, loader.fromSnapshot(snapshotVersion, version, checkpointId))
    }
    val ((path, replayed), besideMaintenance) =
      if (loaded.getAndSet(true)) (load(), false) else CheckpointMaintenanceLocks.loading(checkpoint.root, this)(load())
    val report = LoadReport(request.version, path, replayed, millisSince(start))
    if (path != LoadPath.Reused || besideMaintenance) log.info(s"txstate: loaded version ${request.version} of $label: $report" +
      (if (besideMaintenance) " (while another instance of the store ran its maintenance in this JVM)" else ""))
    report
  }

  private def loadVersion(version: Long, checkpointId: Option[String]): (LoadPath, Int) = {
    val local = engine.committed
    val clean = engine.inFlight.isEmpty
    if (clean && local.version == version && (ownChangelogHolds(local) || loader.holds(local, version, checkpointId))) {
      (LoadPath.Reused, 0)
    // Checked and rolled back in one step: the heap budget may drop the undo at any moment, and a
    // dropped one sends the load on to the checkpoint below (docs/ARCHITECTURE.md, "Heap budget").
    } else if (clean && engine.rollbackLastCommitIf(loader.holds(_, version, checkpointId)).isDefined) {
      (LoadPath.RolledBack, 0)
    } else {
      loader.catchUp(version, checkpointId) match {
        case Some(n) => (LoadPath.CaughtUp, n)
        case None => (LoadPath.Rebuilt, loader.rebuild(version, checkpointId))
      }
    }
  }

  /**
   * Whether the local commit point is the version this instance committed last, with its changelog
   * untouched since: then the header `holds` would read under checkpoint format v1 is the one this
   * instance wrote, its id is the local one, and the load reads nothing (docs/ARCHITECTURE.md,
   * "What a load reads"). Format v1 rewrites `<v>.txlog` on every attempt, so a retried or zombie
   * task on another executor may have replaced it since: the file's status must still be ours
   * (`stillAsWritten`: an S3 entity tag equal to the MD5 of our bytes, or the same local inode),
   * else the header is read and a replaced file is never mistaken for ours. The knowledge is in
   * memory only, so it never outlives this instance or its process. Under format v2 Spark names the
   * id to load and `holds` reads nothing anyway.
   */
  private def ownChangelogHolds(local: CommitPoint): Boolean =
    !options.idsInFileNames && ownChangelog.exists { written =>
      written.header.version == local.version && local.checkpointId.contains(written.header.checkpointId) &&
        checkpoint.stillAsWritten(written)
    }

  private def idInName(id: String): Option[String] = loader.idInName(id)

  private def walkDown(version: Long, checkpointId: Option[String])(stop: (Long, Option[String]) => Boolean) =
    loader.walkDown(version, checkpointId)(stop)

  private def cannotRebuild(version: Long, why: String): StoreException = loader.cannotRebuild(version, why)
}

object StoreInstance {
  /** Who holds the instance: nobody, a batch (or load), a batch with a close waiting, or nobody ever again. */
  private sealed trait Lifecycle
  private case object Idle extends Lifecycle
  private case object Busy extends Lifecycle
  private case object CloseWhenIdle extends Lifecycle
  private case object Closed extends Lifecycle

  /**
   * Opens the instance whose local database lives in `local` and whose checkpoint files live
   * under `checkpointRoot`; its committed values may be cached in `cache`, its native memory
   * bounded by `budget` (None: sized by `options` alone), and its kept undo and buffers counted in
   * `heap` (None: undo always kept), all shared with the other instances of the executor. On any failure everything opened so far is closed again (and the
   * local directory released), so nothing leaks and no RocksDB lock is left held.
   */
  def open(local: LocalDirectory, checkpointRoot: Path, hadoopConf: Configuration, options: StoreOptions,
      label: String, cache: HotStateCache = HotStateCache.off, budget: Option[NativeMemoryBudget] = None,
      heap: Option[HeapMemoryBudget] = None): StoreInstance = {
    val opened = List.newBuilder[AutoCloseable]
    def closeOpened(cause: Throwable): Unit = opened.result().reverse.foreach { c =>
      try c.close() catch { case NonFatal(e) => cause.addSuppressed(e) }
    }
    try {
      opened += (() => local.release())
      val checkpoint = new StoreCheckpoint(checkpointRoot, hadoopConf)
      opened += checkpoint
      val engine = openEngine(local, options, cache, budget, heap, label)
      opened += engine
      val instance = new StoreInstance(local, checkpoint, engine, new SnapshotStager(local.stagingDir, checkpoint), options, label)
      ExecutorStores.opened(instance)
      instance
    } catch {
      case e: Throwable =>
        closeOpened(e)
        throw e
    }
  }

  /**
   * The engine over `local`. A stable directory outlives its process, so its files can be found
   * damaged (a disk error, a crash during a file system repair, a hand edit). It only ever holds
   * versions the checkpoint already has (the changelog is written before the local commit), so
   * such a directory is wiped, opened empty, and the load rebuilds from the checkpoint
   * (docs/reliability.md, "Corruption matrix").
   */
  private def openEngine(local: LocalDirectory, options: StoreOptions, cache: HotStateCache,
      budget: Option[NativeMemoryBudget], heap: Option[HeapMemoryBudget], label: String): TxEngine =
    try TxEngine.open(local.dir, options.engine, cache, budget, heap)
    catch {
      case e: LocalStateException if local.stable && e.errorCode == EngineErrors.damagedDatabaseCode =>
        openLog.warn(s"txstate: the local directory of $label is damaged; wiping it, the load rebuilds from the " +
          s"checkpoint: ${e.getMessage}")
        TxEngine.delete(local.dir)
        TxEngine.open(local.dir, options.engine, cache, budget, heap)
    }

  private val openLog = LoggerFactory.getLogger(classOf[StoreInstance])

  private def millisSince(startNanos: Long): Long = (System.nanoTime() - startNanos) / 1000000
}
