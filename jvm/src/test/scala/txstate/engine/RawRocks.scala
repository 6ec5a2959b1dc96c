package txstate.engine

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

import org.rocksdb.{ColumnFamilyDescriptor, ColumnFamilyHandle, ColumnFamilyOptions, DBOptions, FlushOptions, Options, RocksDB}

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using

/**
 * A closed engine's directory opened with plain RocksDB, to see byte for byte what each column
 * family holds, or to write what another release would have written. Never while an engine has
 * the directory open (RocksDB's LOCK).
 */
object RawRocks {
  /** The column family names of the database in `dir`. */
  def familyNames(dir: File): Vector[String] = {
    RocksDB.loadLibrary()
    Using.resource(new Options())(o => RocksDB.listColumnFamilies(o, dir.getAbsolutePath)).asScala.toVector
      .map(new String(_, UTF_8))
  }

  /**
   * Runs `f` on the database in `dir` with every family it has (and `create`, made if missing),
   * by name; flushes and closes everything after, so the next open finds the writes without a WAL.
   */
  def withDatabase[A](dir: File, create: Seq[String] = Nil)(f: (RocksDB, Map[String, ColumnFamilyHandle]) => A): A = {
    RocksDB.loadLibrary()
    val existing = if (new File(dir, "CURRENT").isFile) familyNames(dir) else Vector.empty
    val default = new String(RocksDB.DEFAULT_COLUMN_FAMILY, UTF_8)
    val names = (Vector(default) ++ existing ++ create).distinct
    Using.Manager { use =>
      val cfOptions = use(new ColumnFamilyOptions())
      val dbOptions = use(new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true))
      val handles = new java.util.ArrayList[ColumnFamilyHandle]()
      val db = use(RocksDB.open(dbOptions, dir.getAbsolutePath,
        names.map(n => new ColumnFamilyDescriptor(n.getBytes(UTF_8), cfOptions)).asJava, handles))
      handles.forEach(h => use(h)) // closed before the database (Using.Manager closes in reverse)
      val byName = names.zip(handles.asScala).toMap
      try f(db, byName)
      finally Using.resource(new FlushOptions().setWaitForFlush(true))(fo => db.flush(fo, handles))
    }.get
  }

  /** Every entry of one family, in key order. */
  def entries(dir: File, family: String): Vector[(Seq[Byte], Seq[Byte])] =
    withDatabase(dir) { (db, families) =>
      Using.resource(db.newIterator(families(family))) { it =>
        it.seekToFirst()
        val out = Vector.newBuilder[(Seq[Byte], Seq[Byte])]
        while (it.isValid) {
          out += (it.key().toSeq -> it.value().toSeq)
          it.next()
        }
        it.status()
        out.result()
      }
    }

  def keys(dir: File, family: String): Vector[String] = entries(dir, family).map(e => new String(e._1.toArray, UTF_8))

  def put(dir: File, family: String, key: Array[Byte], value: Array[Byte]): Unit =
    withDatabase(dir, create = Seq(family))((db, families) => db.put(families(family), key, value))
}
