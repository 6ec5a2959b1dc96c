package txstate.engine

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._
import scala.util.Using

import org.rocksdb._

/**
 * One open RocksDB directory with its two column families: `data` for user rows and `commit` for
 * the commit point. Owns the database and the column family handles; the option objects belong to
 * the caller ([[TxEngine]]), which outlives every database it opens.
 */
private[engine] final class LocalDatabase private (
    val dir: File,
    val db: RocksDB,
    val data: ColumnFamilyHandle,
    val commit: ColumnFamilyHandle,
    defaultCf: ColumnFamilyHandle) extends AutoCloseable {

  private var closed = false

  /** The value of `key` in `data`, now or as of `snapshot`. */
  def get(snapshot: Option[Snapshot], key: Array[Byte]): Option[Array[Byte]] = snapshot match {
    case None => Option(db.get(data, key))
    case Some(s) => Using.resource(new ReadOptions().setSnapshot(s))(ro => Option(db.get(data, ro, key)))
  }

  /** The current values of `keys` in `data`, in order, in one multiGet. */
  def getAll(keys: Seq[Array[Byte]]): Seq[Option[Array[Byte]]] =
    if (keys.isEmpty) Nil
    else {
      val families = java.util.Collections.nCopies(keys.size, data)
      db.multiGetAsList(families, keys.asJava).asScala.toSeq.map(Option(_))
    }

  /** The rows of `data` in `range`, now or as of `snapshot`; the iterator owns its native objects. */
  def range(snapshot: Option[Snapshot], range: KeyRange): KeyValueIterator = new RocksRangeIterator(ro => {
    snapshot.foreach(ro.setSnapshot)
    db.newIterator(data, ro)
  }, range)

  def close(): Unit = if (!closed) {
    closed = true
    // Flush so a later open of the same directory finds every committed version (the WAL is off).
    try Using.resource(new FlushOptions().setWaitForFlush(true))(fo => db.flush(fo, java.util.List.of(data, commit)))
    finally {
      data.close()
      commit.close()
      defaultCf.close()
      db.close()
    }
  }
}

private[engine] object LocalDatabase {
  val dataFamily: Array[Byte] = "data".getBytes(UTF_8)
  val commitFamily: Array[Byte] = "commit".getBytes(UTF_8)

  def open(dir: File, dbOptions: DBOptions, dataOptions: ColumnFamilyOptions, commitOptions: ColumnFamilyOptions)
      : LocalDatabase = {
    if (!dir.isDirectory && !dir.mkdirs()) throw EngineErrors.cannotCreateDirectory(dir)
    val descriptors = java.util.List.of(
      new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, commitOptions),
      new ColumnFamilyDescriptor(dataFamily, dataOptions),
      new ColumnFamilyDescriptor(commitFamily, commitOptions))
    val handles = new java.util.ArrayList[ColumnFamilyHandle]()
    val db = RocksDB.open(dbOptions, dir.getAbsolutePath, descriptors, handles)
    val h = handles.asScala.toVector
    new LocalDatabase(dir, db, h(1), h(2), h(0))
  }
}
