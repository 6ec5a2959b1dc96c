package txstate.engine

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.util.{Comparator, UUID}

import scala.util.Using

import org.rocksdb.{BlockBasedTableConfig, BloomFilter, Checkpoint, FlushOptions, IndexType, ColumnFamilyOptions, CompressionType, DBOptions, LRUCache, ReadOptions, RocksDB, Snapshot, WriteBatch, WriteOptions}

/**
 * The transactional RocksDB engine of one store instance (KIP-892 in bytes, no Spark types).
 *
 * - Data and the commit point live in separate column families and change in ONE atomic write,
 *   so the local database is never torn: whatever it holds, its commit point says which version.
 * - Multi-write sequences (changelog replay) first write an in-flight marker; a database found
 *   with the marker set is not trusted and is rebuilt by the caller.
 * - The WAL is off and flushes are atomic across column families: after a crash the database is
 *   at some earlier consistent commit point, and the caller replays changelogs from there.
 * - The last commit can be undone without touching the checkpoint: a RocksDB snapshot taken just
 *   before it plus the keys it touched restore the previous version (Spark re-runs batches).
 *
 * Not thread-safe: the owner (one store provider) serialises transactions.
 */
final class TxEngine private (val dir: File, val options: EngineOptions) extends AutoCloseable {
  import TxEngine._

  RocksDB.loadLibrary()

  // Option objects: owned here, closed last, shared by every database this engine opens.
  private val cache = new LRUCache(options.blockCacheBytes)
  private val bloom = new BloomFilter(10, false)
  // Index and filter blocks live in the (bounded) block cache, partitioned with the top level
  // pinned: whole index/filter blocks competing with data blocks in a small cache made every get
  // at 1M keys reload them (about 150 us per get in the benchmark, against 9 us).
  private val tableConfig = new BlockBasedTableConfig()
    .setBlockCache(cache)
    .setFilterPolicy(bloom)
    .setCacheIndexAndFilterBlocks(true)
    .setCacheIndexAndFilterBlocksWithHighPriority(true)
    .setPinL0FilterAndIndexBlocksInCache(true)
    .setPinTopLevelIndexAndFilter(true)
    .setIndexType(IndexType.kTwoLevelIndexSearch)
    .setPartitionFilters(true)
    .setMetadataBlockSize(4096)
  private val dbOptions = new DBOptions()
    .setCreateIfMissing(true)
    .setCreateMissingColumnFamilies(true)
    .setAtomicFlush(true)
    .setMaxBackgroundJobs(2)
    .setMaxOpenFiles(256)
  private val dataOptions = new ColumnFamilyOptions()
    .setTableFormatConfig(tableConfig)
    .setWriteBufferSize(options.writeBufferBytes)
    .setMaxWriteBufferNumber(options.maxWriteBuffers)
    .setCompressionType(CompressionType.LZ4_COMPRESSION)
  private val commitOptions = new ColumnFamilyOptions().setWriteBufferSize(1L << 20)
  private val writeOptions = new WriteOptions().setDisableWAL(true)

  private var database: LocalDatabase = _
  private var committedPoint: CommitPoint = CommitPoint.empty
  private var inFlightVersion: Option[Long] = None
  private var undo: Option[Undo] = None
  private var spill: Option[OpenSpill] = None
  private var closed = false
  private var incarnationId = UUID.randomUUID().toString
  private val views = new ViewPublisher

  openDatabase()

  /** The version the local database holds. */
  def committed: CommitPoint = committedPoint

  /** Set when a multi-write sequence was interrupted: the data is not exactly any version. */
  def inFlight: Option[Long] = inFlightVersion

  /** What [[rollbackLastCommit]] would restore, if the last commit can be undone. */
  def committedBeforeLastCommit: Option[CommitPoint] = undo.map(_.previous)

  def begin(): Transaction = {
    ensureOpen()
    if (inFlightVersion.isDefined) {
      throw new IllegalStateException(
        s"txstate: local state in $dir has an interrupted write of version ${inFlightVersion.get}; load a version first")
    }
    new Transaction(this, committedPoint)
  }

  /**
   * Runs `read` against the last committed version, from any thread (interactive queries). None
   * when there is no committed view: the engine is closed, or its database is being replaced or
   * holds an interrupted write. Waits at most `waitMs` for a database replacement to finish.
   */
  def readCommittedView[T](waitMs: Long)(read: CommittedView => T): Option[T] = views.read(waitMs)(read)

  /** Reads a committed value (the view transactions read through). */
  private[engine] def readCommitted(key: Array[Byte]): Array[Byte] = database.db.get(database.data, key)

  private[engine] def committedRange(range: KeyRange): KeyValueIterator =
    new RocksRangeIterator(ro => database.db.newIterator(database.data, ro), range)

  /**
   * Writes the transaction's changes and `point` in one atomic RocksDB write, keeping what is
   * needed to undo it. The caller makes the changelog durable first (DESIGN §2.3).
   */
  def commit(tx: Transaction, point: CommitPoint): Unit = {
    ensureOpen()
    require(tx.base == committedPoint,
      s"txstate: transaction began at version ${tx.base.version} but the store is at ${committedPoint.version}")
    tx.closeIterators()
    releaseUndo()
    spill match {
      case Some(open) if open.tx eq tx =>
        // The version's earlier sub-batches are in the database already; this write finishes it
        // and clears the in-flight marker atomically. Undoing it would need every spilled key, so
        // a spilled version is not kept for rollback: a re-run rebuilds instead.
        Using.resource(new WriteBatch()) { batch =>
          tx.buffer.changes.foreach(addTo(batch, _))
          batch.put(database.commit, committedKey, point.toBytes)
          batch.delete(database.commit, inFlightKey)
          database.db.write(writeOptions, batch)
        }
        database.db.releaseSnapshot(open.before)
        spill = None
        inFlightVersion = None
      case _ =>
        val snapshot = database.db.getSnapshot
        val touched = tx.buffer.touchedKeys
        try {
          Using.resource(new WriteBatch()) { batch =>
            tx.buffer.changes.foreach(addTo(batch, _))
            batch.put(database.commit, committedKey, point.toBytes)
            database.db.write(writeOptions, batch)
          }
        } catch {
          case e: Throwable =>
            database.db.releaseSnapshot(snapshot)
            throw e
        }
        undo = Some(Undo(snapshot, touched, committedPoint))
    }
    committedPoint = point
    views.publish(database, point)
  }

  /**
   * Early commit (DESIGN §3): moves the transaction's buffer into the database as a sub-batch of
   * the still-open version `base + 1`, under the in-flight marker, so memory stays bounded. The
   * first spill keeps a RocksDB snapshot of the committed version: `undoSpill` restores from it.
   * The caller makes the sub-batch durable (a changelog segment) first.
   */
  def spill(tx: Transaction): Unit = {
    ensureOpen()
    require(tx.base == committedPoint,
      s"txstate: transaction began at version ${tx.base.version} but the store is at ${committedPoint.version}")
    if (spill.isEmpty) {
      releaseUndo()
      spill = Some(OpenSpill(tx, database.db.getSnapshot))
    }
    val version = tx.base.version + 1
    Using.resource(new WriteBatch()) { batch =>
      batch.put(database.commit, inFlightKey, java.nio.ByteBuffer.allocate(8).putLong(version).array())
      tx.buffer.changes.foreach(addTo(batch, _))
      database.db.write(writeOptions, batch)
    }
    inFlightVersion = Some(version)
    tx.afterSpill()
  }

  /** True when `tx` has moved sub-batches into the database. */
  def hasSpilled(tx: Transaction): Boolean = spill.exists(_.tx eq tx)

  /**
   * Undoes every sub-batch of a spilled transaction: each key they touched gets back its value in
   * the committed version, read from the snapshot taken before the first spill; then the in-flight
   * marker is cleared. `spilledChanges` lists the sub-batches' changes (read back from their
   * segments, so the keys never had to stay in memory).
   */
  def undoSpill(tx: Transaction, spilledChanges: Iterator[ChangeRecord]): Unit = {
    ensureOpen()
    val open = spill.filter(_.tx eq tx).getOrElse(throw new IllegalStateException("txstate: no spilled transaction to undo"))
    Using.resource(new ReadOptions().setSnapshot(open.before)) { atSnapshot =>
      var batch = new WriteBatch()
      try {
        def restore(key: Array[Byte]): Unit = {
          val old = database.db.get(database.data, atSnapshot, key)
          if (old == null) batch.delete(database.data, key) else batch.put(database.data, key, old)
        }
        spilledChanges.foreach { change =>
          change match {
            case ChangeRecord.Put(k, _) => restore(k)
            case ChangeRecord.Delete(k) => restore(k)
            case ChangeRecord.DeleteRange(from, until) =>
              Using.resource(new RocksRangeIterator(ro => {
                ro.setSnapshot(open.before)
                database.db.newIterator(database.data, ro)
              }, KeyRange(from, Some(until))))(_.foreach(kv => batch.put(database.data, kv.key, kv.value)))
          }
          if (batch.getDataSize >= options.replayChunkBytes) {
            database.db.write(writeOptions, batch)
            batch.close()
            batch = new WriteBatch()
          }
        }
        batch.delete(database.commit, inFlightKey)
        database.db.write(writeOptions, batch)
      } finally batch.close()
    }
    database.db.releaseSnapshot(open.before)
    spill = None
    inFlightVersion = None
  }

  /** Restores the version before the last commit (Spark re-runs a batch this store committed). */
  def rollbackLastCommit(): CommitPoint = {
    ensureOpen()
    val u = undo.getOrElse(throw new IllegalStateException("txstate: no commit to roll back"))
    Using.resource(new ReadOptions().setSnapshot(u.snapshot)) { atSnapshot =>
      Using.resource(new WriteBatch()) { batch =>
        u.touched.points.foreach { key =>
          val old = database.db.get(database.data, atSnapshot, key)
          if (old == null) batch.delete(database.data, key) else batch.put(database.data, key, old)
        }
        u.touched.ranges.foreach { range =>
          Using.resource(new RocksRangeIterator(ro => {
            ro.setSnapshot(u.snapshot)
            database.db.newIterator(database.data, ro)
          }, range)) { it =>
            it.foreach(kv => batch.put(database.data, kv.key, kv.value))
          }
        }
        batch.put(database.commit, committedKey, u.previous.toBytes)
        database.db.write(writeOptions, batch)
      }
    }
    releaseUndo()
    committedPoint = u.previous
    views.publish(database, committedPoint)
    committedPoint
  }

  /**
   * Applies a version's changes read from its changelog, in chunks bounded by
   * `options.replayChunkBytes`, under an in-flight marker that the last chunk clears together with
   * the new commit point.
   */
  def replay(changes: Iterator[ChangeRecord], point: CommitPoint): Unit = {
    ensureOpen()
    releaseUndo()
    markInFlight(point.version)
    var batch = new WriteBatch()
    try {
      changes.foreach { change =>
        addTo(batch, change)
        if (batch.getDataSize >= options.replayChunkBytes) {
          database.db.write(writeOptions, batch)
          batch.close()
          batch = new WriteBatch()
        }
      }
      batch.put(database.commit, committedKey, point.toBytes)
      batch.delete(database.commit, inFlightKey)
      database.db.write(writeOptions, batch)
    } finally batch.close()
    inFlightVersion = None
    committedPoint = point
    views.publish(database, point)
  }

  /**
   * A RocksDB checkpoint of the committed state in `target` (hard links where possible): the
   * memtables are flushed first, since the WAL is off. Returns the commit point it holds.
   */
  def checkpointTo(target: File): CommitPoint = {
    ensureOpen()
    if (inFlightVersion.isDefined) {
      throw new IllegalStateException(s"txstate: cannot snapshot $dir while version ${inFlightVersion.get} is in flight")
    }
    Using.resource(new FlushOptions().setWaitForFlush(true)) { fo =>
      database.db.flush(fo, java.util.List.of(database.data, database.commit))
    }
    Using.resource(Checkpoint.create(database.db))(_.createCheckpoint(target.getAbsolutePath))
    committedPoint
  }

  /**
   * Replaces the database with files that `fill` puts into the (emptied) directory, e.g. a
   * snapshot from the checkpoint, and returns the commit point they hold.
   */
  def restore(fill: File => Unit): CommitPoint = {
    ensureOpen()
    releaseUndo()
    releaseSpill()
    views.excludingReaders {
      database.close()
      deleteRecursively(dir.toPath)
      if (!dir.mkdirs()) throw new IllegalStateException(s"txstate: cannot create the local state directory $dir")
      try fill(dir)
      catch {
        case e: Throwable =>
          deleteRecursively(dir.toPath)
          openDatabase()
          throw e
      }
      incarnationId = UUID.randomUUID().toString
      openDatabase()
    }
    committedPoint
  }

  /** A fresh id each time the local database is created anew: RocksDB file names restart with it. */
  def incarnation: String = incarnationId

  /** Drops every row and the commit point: the database becomes version 0. */
  def wipe(): Unit = {
    ensureOpen()
    releaseUndo()
    releaseSpill()
    views.excludingReaders {
      database.close()
      deleteRecursively(dir.toPath)
      incarnationId = UUID.randomUUID().toString
      openDatabase()
    }
  }

  /** Drops every row and makes the database an empty store at `version` (Spark's `loadEmpty`). */
  def startEmptyAt(version: Long): Unit = {
    wipe()
    val point = CommitPoint.empty.copy(version = version, commitTimeMs = System.currentTimeMillis())
    database.db.put(database.commit, writeOptions, committedKey, point.toBytes)
    committedPoint = point
    views.publish(database, point)
  }

  /** Live memtable and block cache bytes of this instance (native memory). */
  def nativeMemoryUsed: Long = {
    val db = database.db
    db.getLongProperty(database.data, "rocksdb.cur-size-all-mem-tables") +
      db.getLongProperty(database.commit, "rocksdb.cur-size-all-mem-tables") + cache.getUsage
  }

  def close(): Unit = if (!closed) {
    closed = true
    try {
      if (database != null) {
        releaseUndo()
        releaseSpill()
        views.excludingReaders(database.close())
      }
    } finally {
      writeOptions.close()
      dataOptions.close()
      commitOptions.close()
      dbOptions.close()
      bloom.close()
      cache.close()
    }
  }

  private def openDatabase(): Unit = {
    database = LocalDatabase.open(dir, dbOptions, dataOptions, commitOptions)
    committedPoint = Option(database.db.get(database.commit, committedKey)).map(CommitPoint.fromBytes)
      .getOrElse(CommitPoint.empty)
    inFlightVersion = Option(database.db.get(database.commit, inFlightKey)).map(b => java.nio.ByteBuffer.wrap(b).getLong)
    // A database holding an interrupted write is no version at all: nothing to show until a load.
    if (inFlightVersion.isEmpty) views.publish(database, committedPoint) else views.withdraw()
  }

  private def markInFlight(version: Long): Unit = {
    val bytes = java.nio.ByteBuffer.allocate(8).putLong(version).array()
    database.db.put(database.commit, writeOptions, inFlightKey, bytes)
    inFlightVersion = Some(version)
  }

  private def addTo(batch: WriteBatch, change: ChangeRecord): Unit = change match {
    case ChangeRecord.Put(k, v) => batch.put(database.data, k, v)
    case ChangeRecord.Delete(k) => batch.delete(database.data, k)
    case ChangeRecord.DeleteRange(from, until) => batch.deleteRange(database.data, from, until)
  }

  private def releaseUndo(): Unit = {
    undo.foreach(u => database.db.releaseSnapshot(u.snapshot))
    undo = None
  }

  /** Forgets an abandoned spill (the database is being replaced or closed). */
  private def releaseSpill(): Unit = {
    spill.foreach(s => database.db.releaseSnapshot(s.before))
    spill = None
  }

  private def ensureOpen(): Unit =
    if (closed) throw new IllegalStateException(s"txstate: the local state engine for $dir is closed")
}

object TxEngine {
  private val committedKey = "committed".getBytes(UTF_8)
  private val inFlightKey = "in_flight".getBytes(UTF_8)

  /** The previous version's view and the keys the last commit changed. */
  private final case class Undo(snapshot: Snapshot, touched: TouchedKeys, previous: CommitPoint)

  /** A transaction that has spilled sub-batches, and the committed view from before the first one. */
  private final case class OpenSpill(tx: Transaction, before: Snapshot)

  def open(dir: File, options: EngineOptions = EngineOptions()): TxEngine = new TxEngine(dir, options)

  /** Deletes a local directory tree (staging areas, wiped databases); absent is fine. */
  def delete(dir: File): Unit = deleteRecursively(dir.toPath)

  private[engine] def deleteRecursively(path: Path): Unit = if (Files.exists(path)) {
    Using.resource(Files.walk(path)) { paths =>
      paths.sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
    }
  }
}
