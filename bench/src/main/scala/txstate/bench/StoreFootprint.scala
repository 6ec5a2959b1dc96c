package txstate.bench

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.util.ArrayList

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.rocksdb.{BlockBasedTableConfig, ColumnFamilyDescriptor, ColumnFamilyHandle, ColumnFamilyOptions, DBOptions,
  LRUCache, RocksDB, WriteBufferManager, WriteOptions}

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.engine.NativeMemoryBudget
import txstate.store.{LocalDirectory, StoreInstance, StoreOptions}

/**
 * What one more open store costs an executor's resident memory outside every budget: opens `count`
 * stores one after another, each writing 3 batches of 50 small rows (the many-stores benchmark's
 * size per store), and prints the process's RSS every quarter, next to the bytes the shared budget
 * counts. The stores are txstate's (`StoreInstance` under one `NativeMemoryBudget`, checkpoint on the
 * local disk) or, for comparison, bare RocksDB databases with one or three column families under one
 * cache and write-buffer manager, as a RocksDB-per-store provider has at the least. The heap is
 * fixed and touched up front (`-Xms` = `-Xmx`, `-XX:+AlwaysPreTouch`), so what grows is native memory.
 *
 *   java -Xms512m -Xmx512m -XX:+AlwaysPreTouch $(cat target/bench-java-args) txstate.bench.StoreFootprint txstate|rocksdb-1|rocksdb-3 COUNT DIR
 */
object StoreFootprint {
  private val budgetBytes = 256L << 20
  private val rows = 50
  private val batches = 3

  private def rssMiB: Long = Files.readAllLines(Paths.get("/proc/self/status")).asScala
    .find(_.startsWith("VmRSS:")).map(_.split("\\s+")(1).toLong >> 10).getOrElse(-1L)

  /**
   * Opens `count` stores with `open` (which also writes them), printing each quarter the RSS and
   * `counted()` MiB (what the shared budget holds).
   */
  private def measure[S](label: String, count: Int, counted: () => Long)(open: Int => S)(close: S => Unit): Unit = {
    def line(stores: Int) = {
      val rss = rssMiB
      println(s"$label: $stores stores, RSS $rss MiB, in the budget ${counted() >> 20} MiB")
    }
    line(0)
    val stores = (0 until count).map { i =>
      val store = open(i)
      if ((i + 1) % math.max(1, count / 4) == 0) line(i + 1)
      store
    }
    stores.foreach(close)
  }

  private def txstate(count: Int, root: File): Unit = {
    val budget = new NativeMemoryBudget(budgetBytes)
    val hadoopConf = new Configuration() // one per executor, as Spark's
    measure("txstate", count, () => budget.usedBytes) { i =>
      val store = StoreInstance.open(LocalDirectory(new File(root, s"local-$i"), stable = true, None),
        new Path(new File(root, s"checkpoint-$i").toURI), hadoopConf, StoreOptions(), s"store $i",
        budget = Some(budget))
      (0 until batches).foreach { b =>
        val batch = store.begin()
        (0 until rows).foreach(k => batch.put(s"key-$i-$k".getBytes(UTF_8), Array.fill[Byte](40)(b.toByte)))
        batch.commit()
      }
      store
    }(_.close())
  }

  private def rocksdb(count: Int, root: File, families: Int): Unit = {
    RocksDB.loadLibrary()
    val cache = new LRUCache(budgetBytes)
    val writeBuffers = new WriteBufferManager(budgetBytes / 2, cache)
    val dbOptions = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true)
      .setWriteBufferManager(writeBuffers).setMaxOpenFiles(256)
    val familyOptions = new ColumnFamilyOptions().setTableFormatConfig(new BlockBasedTableConfig().setBlockCache(cache))
      .setArenaBlockSize(NativeMemoryBudget.arenaBlockBytes)
    val writeOptions = new WriteOptions().setDisableWAL(true)
    val names = RocksDB.DEFAULT_COLUMN_FAMILY +: (1 until families).map(f => s"family-$f".getBytes(UTF_8))
    measure(s"rocksdb-$families", count, () => cache.getUsage) { i =>
      val handles = new ArrayList[ColumnFamilyHandle]()
      val db = RocksDB.open(dbOptions, new File(root, s"db-$i").getPath,
        names.map(new ColumnFamilyDescriptor(_, familyOptions)).asJava, handles)
      (0 until batches * rows).foreach(k => db.put(handles.get(handles.size - 1), writeOptions,
        s"key-$i-${k % rows}".getBytes(UTF_8), new Array[Byte](40)))
      (db, handles)
    } { case (db, handles) => handles.asScala.foreach(_.close()); db.close() }
    Seq(writeOptions, familyOptions, dbOptions, writeBuffers, cache).foreach(_.close())
  }

  def main(args: Array[String]): Unit = {
    val Array(kind, count, dir) = args
    val root = Files.createTempDirectory(Paths.get(dir), "footprint-").toFile
    kind match {
      case "txstate" => txstate(count.toInt, root)
      case "rocksdb-1" => rocksdb(count.toInt, root, 1)
      case "rocksdb-3" => rocksdb(count.toInt, root, 3)
      case other => sys.error(s"unknown kind $other: txstate, rocksdb-1 or rocksdb-3")
    }
  }
}
