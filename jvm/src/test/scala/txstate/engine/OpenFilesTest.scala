package txstate.engine

import java.io.File
import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using

import EngineTestKit._

/**
 * The files a store keeps open, read from this process's descriptor table (/proc/self/fd): an
 * executor hosts thousands of store instances, and each open file counts against its `ulimit -n`
 * (docs/ARCHITECTURE.md, "Open files").
 */
final class OpenFilesTest extends AnyFunSuite {

  /** This process's open descriptors that point into `dir`, by kind: "dir", "LOG", "sst", ... */
  private def openInto(dir: File): Map[String, Int] = {
    val root = dir.getCanonicalPath
    val targets = Using.resource(Files.newDirectoryStream(Paths.get("/proc/self/fd"))) { fds =>
      fds.asScala.toVector.flatMap(fd => scala.util.Try(Files.readSymbolicLink(fd)).toOption)
    }
    targets.map(_.toString).filter(t => t == root || t.startsWith(root + "/")).map { target =>
      val name = Paths.get(target).getFileName.toString
      if (Files.isDirectory(Paths.get(target))) "dir"
      else if (name.endsWith(".sst")) "sst"
      else name.replaceAll("[0-9]+", "N")
    }.groupBy(identity).map { case (kind, all) => kind -> all.size }
  }

  private def withDir[A](f: File => A): A = {
    val dir = Files.createTempDirectory("txstate-open-files").toFile
    try f(dir) finally TxEngine.deleteRecursively(dir.toPath)
  }

  /**
   * What `dir` holds open once RocksDB's compactions after the last flush ran (they are in the
   * background): the first count within the bound, or the last one seen after 10 seconds.
   */
  private def settled(dir: File): Map[String, Int] = {
    val deadline = System.nanoTime() + 10L * 1000 * 1000 * 1000
    var open = openInto(dir)
    while (open.getOrElse("sst", 0) > tableFilesBound && System.nanoTime() < deadline) {
      Thread.sleep(50)
      open = openInto(dir)
    }
    open
  }

  // The user rows' family compacts at its fourth file, the commit family at each: after a flush,
  // at most 3 + 1, and one more while the flush's own compaction has not run.
  private val tableFilesBound = 5

  // Each snapshot the checkpoint takes flushes every family: a store a few batches old has files in
  // each. Each batch writes keys all over one range, as most state does, so its files overlap and
  // RocksDB merges them (files of disjoint ranges it would only move, not merge).
  private def commitAndCheckpoint(engine: TxEngine, dir: File, batches: Int): Unit =
    (1 to batches).foreach { batch =>
      commitWith(engine) { tx => (1 to 50).foreach(i => tx.put(b(f"k${(i * 7 + batch) % 100}%03d"), b(s"v$batch"))) }
      val target = new File(dir.getParentFile, s"${dir.getName}-snapshot-$batch")
      try engine.checkpointTo(target) finally TxEngine.deleteRecursively(target.toPath)
    }

  test("a new store keeps one handle on its directory per open, no LOG file, and one file of the commit family") {
    assume(Files.isDirectory(Paths.get("/proc/self/fd")), "needs Linux's /proc")
    withDir { parent =>
      val dir = new File(parent, "store")
      withEngine(dir) { engine =>
        commitAndCheckpoint(engine, dir, batches = 6)
        val open = settled(dir)
        // RocksDB holds the directory twice (the database's and its families' shared handle).
        assert(open.getOrElse("dir", 0) <= 2, s"directory handles: $open")
        assert(!open.contains("LOG"), s"RocksDB writes a LOG file per store: $open")
        assert(open.getOrElse("sst", 0) <= tableFilesBound, s"table files: $open")
        assert(open.values.sum <= 10, s"open files of one store: $open")
      }
      assert(openInto(dir).isEmpty, "files stayed open after the engine closed")
      // Each open family costs native memory: the format 1 rows' and the TTL index's wait for a write.
      assert(RawRocks.familyNames(dir).toSet == Set("default", LocalDatabase.stampedFamily, LocalDatabase.commitFamily))
    }
  }

  test("the TTL index's family is created by the first batch with TTL, and reopens with the store") {
    withDir { parent =>
      val dir = new File(parent, "store")
      withEngine(dir) { engine =>
        commitStamped(engine, WriteStamp(0, 1000), Some(TimeToLive(60000L, _ => true)))(_.put(b("k"), b("v")))
        assert(drain(engine.timeIndexBefore(Long.MaxValue)).size == 1, "the TTL index lost its entry")
      }
      assert(RawRocks.familyNames(dir).contains(LocalDatabase.timeIndexFamily))
      withEngine(dir)(engine => assert(drain(engine.timeIndexBefore(Long.MaxValue)).size == 1))
    }
  }

  test("a store reopened from its directory keeps as few files open as a new one") {
    assume(Files.isDirectory(Paths.get("/proc/self/fd")), "needs Linux's /proc")
    withDir { parent =>
      val dir = new File(parent, "store")
      withEngine(dir)(engine => commitAndCheckpoint(engine, dir, batches = 2))
      withEngine(dir) { engine =>
        commitAndCheckpoint(engine, dir, batches = 2)
        val open = settled(dir)
        assert(open.getOrElse("dir", 0) <= 2 && !open.contains("LOG") && open.values.sum <= 10, s"open files: $open")
      }
    }
  }
}
