package txstate.engine

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

import org.rocksdb._

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using

/**
 * One open RocksDB directory and its column families:
 * - `stamped`: user rows of storage format 2, each value behind its write stamp ([[StampedValues]]);
 * - `data`: user rows of storage format 1 (0.1.0), stored plain. A format 2 store reads them until
 *   each is written again, which moves it to `stamped` (KIP-258's lazy upgrade in place). A key
 *   lives in one of the two families, never both;
 * - `by_time`: the TTL index ([[TimeIndex]]), filled only while TTL is on;
 * - `commit`: the commit point and the in-flight marker.
 * `data` and `by_time` are created the first time something is written to them (most stores never
 * write either): each open family costs RocksDB native memory outside any budget, paid once per
 * family per store instance, and an executor may hold thousands of instances (docs/ARCHITECTURE.md,
 * "Open files"). Until then they read as empty.
 * Families a newer build added are opened too (RocksDB requires it), so the commit point can say
 * which release wrote them. Owns the database and the handles; the option objects belong to the
 * caller ([[TxEngine]]), which outlives every database it opens.
 */
private[engine] final class LocalDatabase private (
    val dir: File,
    val db: RocksDB,
    opened: Map[String, ColumnFamilyHandle],
    dataOptions: ColumnFamilyOptions) extends AutoCloseable {

  // The open families by name; grows when `data` or `by_time` is created (by the owner's thread or
  // its background writes), read by committed views' threads too.
  @volatile private var handles: Map[String, ColumnFamilyHandle] = opened

  val stamped: ColumnFamilyHandle = handles(LocalDatabase.stampedFamily)
  val commit: ColumnFamilyHandle = handles(LocalDatabase.commitFamily)

  /** The format 1 rows' family, created if this database has none yet: for writes of plain rows. */
  def data: ColumnFamilyHandle = family(LocalDatabase.plainFamily)

  /** The TTL index's family, created if this database has none yet: for writes and reads of the index. */
  def byTime: ColumnFamilyHandle = family(LocalDatabase.timeIndexFamily)

  /** Every family this database has open: what a flush or a memtable count covers. */
  def families: Seq[ColumnFamilyHandle] = handles.values.toSeq

  private def family(name: String): ColumnFamilyHandle = handles.getOrElse(name, synchronized {
    handles.getOrElse(name, {
      val created = db.createColumnFamily(new ColumnFamilyDescriptor(name.getBytes(UTF_8), dataOptions))
      handles = handles.updated(name, created)
      created
    })
  })

  // False once `data` is seen empty, so a store that has no format 1 rows reads one family only.
  // Checked when the database opens; a replay of a format 1 changelog sets it again. Readers on
  // other threads see a stale flag only across a database replacement, which excludes them.
  @volatile private var plainRowsPossible: Boolean = handles.get(LocalDatabase.plainFamily).exists(hasRows)
  // The same for `stamped`, so writing format 1 (a benchmark's baseline) costs what 0.1.0's writes did.
  @volatile private var stampedRowsPossible: Boolean = hasRows(stamped)
  // Whether the user-row families' new memtables get a whole-key filter: see `noteBatch`.
  @volatile private var memtableFilters = false
  private var closed = false

  /**
   * Told the row count of each batch committed; the first of `memtableFilterRows` rows or more turns
   * on a whole-key bloom filter in the user-row families' memtables, from their next memtable on.
   * A get searches the memtable before the table files, and with a large batch's rows in it that
   * search dominates a get of a key the batch has not written; the filter answers most misses with one probe
   * (docs/ARCHITECTURE.md, "Memtable filters"). RocksDB sizes the filter from the write buffer, not
   * from the rows (1.3 MiB per memtable, charged to the native budget), so stores with small batches
   * (an executor may hold thousands) never get one. Best effort: a refused change (a full disk
   * cannot take the new OPTIONS file) leaves the filters off and is tried again with the next batch.
   */
  def noteBatch(rows: Long): Unit = if (!memtableFilters && rows >= LocalDatabase.memtableFilterRows) {
    val filtered = MutableColumnFamilyOptions.builder()
      .setMemtablePrefixBloomSizeRatio(LocalDatabase.memtableFilterRatio)
      .setMemtableWholeKeyFiltering(true)
      .build()
    try {
      (stamped +: handles.get(LocalDatabase.plainFamily).toSeq).foreach(db.setOptions(_, filtered))
      memtableFilters = true
    } catch { case _: RocksDBException => () }
  }

  def mayHoldPlainRows: Boolean = plainRowsPossible
  def notePlainRows(): Unit = plainRowsPossible = true
  def mayHoldStampedRows: Boolean = stampedRowsPossible
  def noteStampedRows(): Unit = stampedRowsPossible = true

  /** The value of `key`, now or as of `snapshot` (its stamp skipped, not decoded: the hot path). */
  def get(snapshot: Option[Snapshot], key: Array[Byte]): Option[Array[Byte]] =
    lookup(snapshot, key)(StampedValues.valueOf, identity)

  /** The row of `key` with its write stamp, now or as of `snapshot`. */
  def row(snapshot: Option[Snapshot], key: Array[Byte]): Option[KeyValue] =
    lookup(snapshot, key)(StampedValues.decode(key, _), KeyValue(key, _))

  /** Only the write stamp of `key`'s current row (no value copied): what expiry decides on. */
  def stampOf(key: Array[Byte]): Option[WriteStamp] = lookup(None, key)(StampedValues.stampOf, _ => WriteStamp.unknown)

  /** The current stored rows of `keys`, in order, in one multiGet per family that may hold them. */
  def storedAll(keys: Seq[Array[Byte]]): Seq[StoredRow] =
    if (keys.isEmpty) Nil
    else {
      val found: Seq[StoredRow] =
        if (stampedRowsPossible) multiGet(stamped, keys).map(_.fold[StoredRow](StoredRow.Absent)(StoredRow.Stamped(_)))
        else keys.map(_ => StoredRow.Absent)
      if (!plainRowsPossible) found
      else {
        val missing = keys.zip(found).collect { case (k, StoredRow.Absent) => k }
        val plain = multiGet(data, missing).iterator
        found.map {
          case StoredRow.Absent => plain.next().fold[StoredRow](StoredRow.Absent)(StoredRow.Plain(_))
          case row => row
        }
      }
    }

  /** The rows in `range` with their stamps, now or as of `snapshot`; the iterator owns its native objects. */
  def range(snapshot: Option[Snapshot], range: KeyRange): KeyValueIterator = {
    def stampedRows = familyRange(stamped, snapshot, range, stampedValues = true)
    def plainRows = familyRange(data, snapshot, range, stampedValues = false)
    if (!plainRowsPossible) stampedRows
    else if (!stampedRowsPossible) plainRows
    else new DisjointMergeIterator(stampedRows, plainRows)
  }

  /** The raw rows of one family in `range` (undo and expiry read the families directly). */
  def familyRange(family: ColumnFamilyHandle, snapshot: Option[Snapshot], range: KeyRange, stampedValues: Boolean)
      : KeyValueIterator =
    new RocksRangeIterator(ro => {
      snapshot.foreach(ro.setSnapshot)
      db.newIterator(family, ro)
    }, range, stampedValues)

  /** `key`'s row as stored now, with the family holding it: what a read keeps to undo a later write. */
  def stored(key: Array[Byte]): StoredRow =
    lookup(None, key)(StoredRow.Stamped(_), StoredRow.Plain(_)).getOrElse(StoredRow.Absent)

  /**
   * The raw values of `keys` in one family as of `snapshot`, in order, in one multiGet (a get per key
   * with its own ReadOptions cost three native calls a key). Callers pass keys in bounded groups.
   */
  def rawGetAll(family: ColumnFamilyHandle, snapshot: Snapshot, keys: Seq[Array[Byte]]): Seq[Option[Array[Byte]]] =
    if (keys.isEmpty) Nil
    else Using.resource(new ReadOptions().setSnapshot(snapshot)) { ro =>
      db.multiGetAsList(ro, java.util.Collections.nCopies(keys.size, family), keys.asJava).asScala.toVector.map(Option(_))
    }

  /**
   * Writes `batch` atomically, never waiting inside RocksDB. `options` must say `noSlowdown`: a
   * write RocksDB would stall (memtables full, a flush under way) comes back at once, and waits
   * here, in short interruptible sleeps, until the flush made room or failed. RocksDB's own stall
   * is native and deaf to interrupts: when the flush that should end it fails (ENOSPC), a task
   * waited there forever, and Spark could not kill it (docs/ARCHITECTURE.md, "A failed local
   * write"). A failed flush leaves RocksDB's background error, which the next attempt returns.
   */
  def write(options: WriteOptions, batch: WriteBatch): Unit = {
    var pauseMs = 1L
    while (!writeUnlessStalled(options, batch)) {
      try Thread.sleep(pauseMs)
      catch {
        case _: InterruptedException =>
          Thread.currentThread().interrupt() // the task is being killed: it still must see it
          // A refused write to the engine, which reopens the database before its next batch.
          throw new RocksDBException(s"interrupted while RocksDB stalled writes to $dir (memtables full, no flush done)")
      }
      pauseMs = math.min(pauseMs * 2, LocalDatabase.longestStallPauseMs)
    }
  }

  /** One value in one family, as [[write]] writes. */
  def put(options: WriteOptions, family: ColumnFamilyHandle, key: Array[Byte], value: Array[Byte]): Unit =
    Using.resource(new WriteBatch()) { batch =>
      batch.put(family, key, value)
      write(options, batch)
    }

  private def writeUnlessStalled(options: WriteOptions, batch: WriteBatch): Boolean =
    try {
      db.write(options, batch)
      true
    } catch {
      case e: RocksDBException if Option(e.getStatus).exists(_.getCode == Status.Code.Incomplete) => false
    }


  def close(): Unit = close(flush = true)

  /** Flushes every family's memtables to files (atomically, as every flush here) and waits for it. */
  def flushMemtables(): Unit = Using.resource(new FlushOptions().setWaitForFlush(true)) { fo =>
    db.flush(fo, families.asJava)
  }

  /**
   * Closes the handles. With `flush`, the memtables are flushed first, so a later open of the same
   * directory finds every committed version (the WAL is off); a failed flush still closes every
   * handle, then throws. Without, unflushed writes are dropped (a directory about to be deleted).
   */
  def close(flush: Boolean): Unit = if (!closed) {
    closed = true
    try if (flush) flushMemtables() finally {
      handles.values.foreach(_.close())
      db.close()
    }
  }

  /**
   * `key`'s stored bytes read as `stamped` or `plain` says, from the family that holds it: `stamped`
   * first, then `data`, each only while it may hold rows.
   */
  private def lookup[T](snapshot: Option[Snapshot], key: Array[Byte])(stampedRow: Array[Byte] => T,
      plainRow: Array[Byte] => T): Option[T] = {
    def read(ro: Option[ReadOptions]): Option[T] = {
      def from(family: ColumnFamilyHandle) = pointRead(family, ro, key)
      val s = if (stampedRowsPossible) from(stamped) else null
      if (s != null) Some(stampedRow(s))
      else if (plainRowsPossible) Option(from(data)).map(plainRow)
      else None
    }
    snapshot match {
      case None => read(None)
      case Some(snap) => Using.resource(new ReadOptions().setSnapshot(snap))(ro => read(Some(ro)))
    }
  }

  /**
   * `key`'s value in `family`, or null when it has none. RocksJava 9's `get` signals a missing key by
   * throwing and catching a C++ exception inside its native call, which costs more than the lookup
   * itself; `keyMayExist` answers a miss, and a hit in the memtables or the block cache, with the
   * same lookup and no exception. It reads no file, so a false answer (a miss it proved) needs no
   * `get`. Its value is trusted only when not empty: where an index partition is not in the block
   * cache it says "may exist" with an empty value it did not read (every stamped row has bytes; a
   * plain row that is truly empty is confirmed by the `get`).
   */
  private def pointRead(family: ColumnFamilyHandle, ro: Option[ReadOptions], key: Array[Byte]): Array[Byte] = {
    val inMemory = new Holder[Array[Byte]]()
    val mayExist = ro.fold(db.keyMayExist(family, key, inMemory))(db.keyMayExist(family, _, key, inMemory))
    val value = inMemory.getValue
    if (!mayExist) null
    else if (value != null && value.length > 0) value
    else ro.fold(db.get(family, key))(db.get(family, _, key))
  }

  private def multiGet(family: ColumnFamilyHandle, keys: Seq[Array[Byte]]): Seq[Option[Array[Byte]]] =
    if (keys.isEmpty) Nil
    else db.multiGetAsList(java.util.Collections.nCopies(keys.size, family), keys.asJava).asScala.toSeq.map(Option(_))

  private def hasRows(family: ColumnFamilyHandle): Boolean =
    Using.resource(db.newIterator(family)) { it =>
      it.seekToFirst()
      it.isValid
    }
}

private[engine] object LocalDatabase {
  val plainFamily = "data"
  val stampedFamily = "stamped"
  val timeIndexFamily = "by_time"
  val commitFamily = "commit"
  // Batches this large fill memtables with rows gets must search past (see `noteBatch`); it is also
  // where a batch's writes start going to the database in the background (EngineOptions).
  val memtableFilterRows = 4096
  // Of the write buffer: 1.3 MiB for 64 MiB, about 16 bits per row of 100-byte rows (under 0.1% false hits).
  val memtableFilterRatio = 0.02
  private val defaultFamily = new String(RocksDB.DEFAULT_COLUMN_FAMILY, UTF_8)
  // A stalled write retries at least this often: a flush takes milliseconds to seconds.
  private val longestStallPauseMs = 50L

  /**
   * True when RocksDB refused the files of a database, not the machine: a checksum or format it
   * finds wrong (Corruption), a missing CURRENT beside other files (InvalidArgument), or a file that
   * CURRENT or the MANIFEST names and the directory lacks (an IOError of ENOENT). A held lock, a full
   * disk or a denied permission are not damage: deleting the directory would not help.
   */
  def isDamage(e: RocksDBException): Boolean = !isNewerFormat(e) && isDamageStatus(e)

  private def isDamageStatus(e: RocksDBException): Boolean = Option(e.getStatus).exists { status =>
    status.getCode == Status.Code.Corruption || status.getCode == Status.Code.InvalidArgument ||
      (status.getCode == Status.Code.IOError && Option(e.getMessage).exists(_.contains("No such file or directory")))
  }

  /**
   * True when RocksDB refused files because a newer RocksDB wrote them (a table format version it
   * does not know: RocksDB 8's answer to 9's SST files). Not damage: the files are sound, and
   * deleting them would not make an older RocksDB read the checkpoint's copies either.
   */
  def isNewerFormat(e: RocksDBException): Boolean = Option(e.getMessage).exists(_.contains("unsupported format_version"))

  /** The RocksDB this JVM loaded (the cluster's, not the one compiled against), e.g. "8.3.2". */
  def rocksDbVersion: String = RocksDB.rocksdbVersion().toString

  /** Opens (or creates) the database with our families and any a newer build added (see the class comment). */
  def open(dir: File, dbOptions: DBOptions, dataOptions: ColumnFamilyOptions, commitOptions: ColumnFamilyOptions)
      : LocalDatabase = {
    if (!dir.isDirectory && !dir.mkdirs()) throw EngineErrors.cannotCreateDirectory(dir)
    val existing = Using.resource(new Options()) { o =>
      if (new File(dir, "CURRENT").isFile) RocksDB.listColumnFamilies(o, dir.getAbsolutePath).asScala.map(new String(_, UTF_8)).toSeq
      else Nil
    }
    // `data` and `by_time` only if the database has them: see the class comment.
    val ours = Seq(defaultFamily -> commitOptions, stampedFamily -> dataOptions, commitFamily -> commitOptions) ++
      Seq(plainFamily, timeIndexFamily).filter(existing.contains).map(_ -> dataOptions)
    val others = existing.filterNot(name => ours.exists(_._1 == name)).map(_ -> commitOptions)
    val families = ours ++ others
    // RocksDB keeps a directory handle open for each family it creates in an open database, and one
    // shared handle for the families it finds when it opens: a new database is created, closed and
    // opened again, which keeps 2 of its files open instead of 6 (docs/ARCHITECTURE.md, "Open files").
    if (existing.isEmpty) openFamilies(dir, dbOptions, families, dataOptions).close(flush = false)
    openFamilies(dir, dbOptions, families, dataOptions)
  }

  private def openFamilies(dir: File, dbOptions: DBOptions, families: Seq[(String, ColumnFamilyOptions)],
      dataOptions: ColumnFamilyOptions): LocalDatabase = {
    val handles = new java.util.ArrayList[ColumnFamilyHandle]()
    val db = RocksDB.open(dbOptions, dir.getAbsolutePath,
      families.map { case (name, o) => new ColumnFamilyDescriptor(name.getBytes(UTF_8), o) }.asJava, handles)
    new LocalDatabase(dir, db, families.map(_._1).zip(handles.asScala).toMap, dataOptions)
  }
}
