package txstate.engine

import java.io.File
import java.nio.file.Files

import scala.io.Source

import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.ScalaLibrary.Using

import EngineTestKit._

/**
 * A store whose batches are large gets a whole-key filter in its row families' memtables; one with
 * small batches does not, since RocksDB sizes the filter from the write buffer, not from the rows
 * (docs/ARCHITECTURE.md, "Memtable filters"). What RocksDB was told is read back from the options
 * file it keeps in the database directory.
 */
final class MemtableFilterTest extends AnyFunSuite {

  /** `option` of column family `family` in the newest OPTIONS file of the database in `dir`. */
  private def familyOption(dir: File, family: String, option: String): Option[String] = {
    val newest = dir.listFiles().filter(_.getName.startsWith("OPTIONS-")).maxBy(_.getName.stripPrefix("OPTIONS-").toLong)
    val lines = Using.resource(Source.fromFile(newest, "UTF-8"))(_.getLines().map(_.trim).toVector)
    lines.dropWhile(_ != s"""[CFOptions "$family"]""").drop(1).takeWhile(!_.startsWith("["))
      .collectFirst { case line if line.startsWith(option + "=") => line.stripPrefix(option + "=") }
  }

  private def withBatchesOf(rows: Int, batches: Int)(check: File => Unit): Unit = {
    val dir = Files.createTempDirectory("txstate-memtable-filter").toFile
    try {
      withEngine(dir) { engine =>
        for (batch <- 0 until batches) commitWith(engine) { tx =>
          (0 until rows).foreach(i => tx.put(b(s"key-$i"), b(s"value-$batch-$i")))
        }
        // What the filter decides must not change what reads return.
        val tx = engine.begin()
        assert(tx.get(b("key-0")).map(str).contains(s"value-${batches - 1}-0"))
        assert(tx.get(b(s"key-$rows")).isEmpty)
        tx.discard()
      }
      check(dir)
    } finally TxEngine.deleteRecursively(dir.toPath)
  }

  test("a batch of 4,096 rows or more turns on the memtable filter of the stamped family") {
    withBatchesOf(rows = LocalDatabase.memtableFilterRows, batches = 2) { dir =>
      assert(familyOption(dir, "stamped", "memtable_prefix_bloom_size_ratio").map(_.toDouble)
        .contains(LocalDatabase.memtableFilterRatio))
      assert(familyOption(dir, "stamped", "memtable_whole_key_filtering").contains("true"))
    }
  }

  test("batches under 4,096 rows leave the memtables without a filter") {
    withBatchesOf(rows = LocalDatabase.memtableFilterRows - 1, batches = 3) { dir =>
      assert(familyOption(dir, "stamped", "memtable_prefix_bloom_size_ratio").map(_.toDouble).contains(0.0))
    }
  }
}
