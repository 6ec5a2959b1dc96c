package txstate.store

import java.io.{File, FileOutputStream}
import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.{Background, TempDirectories}
import txstate.compat.ScalaLibrary.Using
import txstate.engine.{EngineOptions, KeyRange, LocalStateException}

/**
 * A store instance whose local database lives on a small tmpfs that fills up (real RocksDB, a real
 * mount; needs root: as any other user the test is canceled and says why, as root a mount that
 * fails fails it). What Spark does when a task fails
 * on an executor is to run it again on the same provider, so the same instance must not go on with
 * a RocksDB handle that refused a write (docs/ARCHITECTURE.md, "A failed local write").
 */
final class StoreInstanceDiskFullTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def str(a: Array[Byte]): String = new String(a, UTF_8)

  private def run(command: String*): Int =
    new ProcessBuilder(command: _*).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.to(new File("/dev/null")))
      .start().waitFor()

  private def runsAsRoot: Boolean =
    java.nio.file.Files.getAttribute(java.nio.file.Paths.get("/proc/self"), "unix:uid") == Integer.valueOf(0)

  /** A tmpfs of `size` on a fresh directory for the body; always unmounted (lazily if files stay open). */
  private def withTmpfs[T](size: String)(body: File => T): T = {
    val dir = newTempDir("tmpfs")
    val status = run("mount", "-t", "tmpfs", "-o", s"size=$size", "tmpfs", dir.getPath)
    if (status != 0 && !runsAsRoot) cancel(s"cannot mount a tmpfs at $dir (mount exited with $status; mounting needs root)")
    if (status != 0) fail(s"cannot mount a tmpfs at $dir as root (mount exited with $status)")
    try body(dir)
    finally if (run("umount", dir.getPath) != 0) run("umount", "-l", dir.getPath)
  }

  /** A file of zeros that leaves about `leaveFree` bytes free on the mount of `dir`. */
  private def fill(dir: File, name: String, leaveFree: Long): File = {
    val filler = new File(dir, name)
    val out = new FileOutputStream(filler)
    try {
      val chunk = new Array[Byte](1 << 16)
      var left = dir.getUsableSpace - leaveFree
      while (left > 0) {
        val n = math.min(left, chunk.length.toLong).toInt
        try out.write(chunk, 0, n) catch { case _: java.io.IOException => left = 0 } // full already
        left -= n
      }
    } finally out.close()
    filler
  }

  private def contents(inst: StoreInstance, version: Long): Map[String, String] = {
    val batch = inst.openBatch(LoadRequest.AtVersion(version, None))
    val rows = batch.iterator(KeyRange.all)
    try rows.map(kv => str(kv.key) -> str(kv.value)).toMap
    finally { rows.close(); batch.discard() }
  }

  test("a batch that early-commits onto a full local disk fails with TXSTATE_LOCAL_DISK_FULL and returns") {
    withTmpfs("16m") { mount =>
      val local = new File(mount, "db")
      // Early commits every 256 KiB into 1 MiB memtables, two at most: RocksDB stops writes while both
      // are full and waits for a flush, which the full disk fails.
      val options = StoreOptions(engine = EngineOptions(writeBufferBytes = 1L << 20, maxWriteBuffers = 2),
        limits = UncommittedLimits(None, Some(256L << 10)))
      val inst = StoreInstance.open(LocalDirectory(local, stable = true, None),
        new Path(newTempPath("checkpoint").toURI), new Configuration(), options, "stalled store")
      val filler = new File(mount, "filler")
      try {
        fill(mount, filler.getName, leaveFree = 192L << 10)
        val random = new Random(18)
        // The body ends after the abort, so the instance is idle (closes at once) when the test closes it.
        val writer = Background("disk-full writer") {
          val batch = inst.openBatch(LoadRequest.AtVersion(0, None))
          val result =
            try {
              (1 to 20000).foreach(i => batch.put(b(f"k$i%06d"), b(random.alphanumeric.take(500).mkString)))
              batch.commit()
              new AssertionError("a batch of 10 MB committed on a full 16 MiB disk")
            } catch { case e: Throwable => e }
          try batch.abort() catch { case _: Throwable => () }
          result
        }
        // Not a timing bound: a write caught in RocksDB's own stall after its flush failed never returned
        // (seen in tests/test_disk_full.py before writes used noSlowdown); this bounds the wait for it.
        writer.result(120) match {
          case e: LocalStateException => assert(e.errorCode == "TXSTATE_LOCAL_DISK_FULL", e.getMessage)
          case other => throw other
        }
      } finally {
        filler.delete()
        inst.close() // without a flush, after the refused write (a close on a full disk: the last test)
      }
    }
  }

  test("a full local disk fails the commit with TXSTATE_LOCAL_DISK_FULL; the same instance refuses batches " +
    "while it stays full, then reopens its database and catches up exactly once space is back") {
    withTmpfs("16m") { mount =>
      val local = new File(mount, "db")
      // 1 MiB memtables, so RocksDB flushes (and meets the full disk) within a few batches.
      val options = StoreOptions(engine = EngineOptions(writeBufferBytes = 1L << 20))
      // Using.resource: a close that fails too (its flush on a full disk) is added to the test's own failure.
      Using.resource(StoreInstance.open(LocalDirectory(local, stable = true, None),
          new Path(newTempPath("checkpoint").toURI), new Configuration(), options, "disk-full store")) { inst =>
        val random = new Random(18)
        var model = Map.empty[String, String]
        def batchOf(version: Long): Map[String, String] =
          (1 to 2000).map(i => f"v$version%02d-k$i%05d" -> random.alphanumeric.take(1000).mkString).toMap
        def commitBatch(rows: Map[String, String]): Long = {
          val batch = inst.openBatch(LoadRequest.AtVersion(inst.committed.version, None))
          try {
            rows.foreach { case (k, v) => batch.put(b(k), b(v)) }
            batch.commit().point.version
          } finally batch.abort() // after a commit it does nothing
        }

        (1 to 2).foreach { v =>
          val rows = (1 to 50).map(i => s"small-$i" -> s"$v").toMap
          assert(commitBatch(rows) == v)
          model ++= rows
        }
        val filler = fill(mount, "filler", leaveFree = 192L << 10)

        // Big batches (2 MiB each) until one fails: the first ones fit in memtables, whose flush fails.
        var failure: Option[LocalStateException] = None
        while (failure.isEmpty && inst.committed.version < 8) {
          val rows = batchOf(inst.committed.version + 1)
          try {
            commitBatch(rows)
            model ++= rows
          } catch { case e: LocalStateException => failure = Some(e) }
        }
        val error = failure.getOrElse(fail(s"eight batches of 2 MiB committed on a full 16 MiB disk"))
        assert(error.errorCode == "TXSTATE_LOCAL_DISK_FULL", error.getMessage)
        assert(error.getMessage.contains(local.getPath), error.getMessage)
        assert(error.getMessage.contains("spark.sql.streaming.stateStore.txstate.localDir"), error.getMessage)
        val committed = inst.committed.version

        // Still full (now to the last byte): the next batch must not run on the refused handle. Either
        // the reopen fails for want of space, or it succeeds because closing the refused database
        // deleted its half-written files (RocksDB's cleanup races the filler): both are fine, and the
        // contents check below fails if a batch ran on the refused handle.
        val moreFiller = fill(mount, "filler-2", leaveFree = 0)
        try inst.openBatch(LoadRequest.AtVersion(committed, None)).abort()
        catch {
          case refused: LocalStateException => assert(refused.errorCode == "TXSTATE_LOCAL_DISK_FULL", refused.getMessage)
        }

        // Space is back: the same instance reopens, catches up from the checkpoint, and goes on.
        assert(filler.delete() && moreFiller.delete())
        assert(run("mount", "-o", "remount,size=64m", mount.getPath) == 0)
        assert(contents(inst, committed) == model, "the state after the reopen differs from every committed write")
        val next = batchOf(committed + 1)
        // A database the store reopened while the disk was still full may keep RocksDB's background
        // error: its first write after space is back is refused once more, and the store reopens again
        // (as Spark's task retry would find it). The retry must then commit exactly.
        val version =
          try commitBatch(next)
          catch { case e: LocalStateException if e.errorCode == "TXSTATE_LOCAL_DISK_FULL" => commitBatch(next) }
        assert(version == committed + 1)
        model ++= next
        assert(contents(inst, committed + 1) == model)
      }
    }
  }

  test("closing an instance on a full local disk drops its unflushed writes without failing; an instance opened " +
    "on the same directory once space is back catches up exactly from the checkpoint") {
    withTmpfs("16m") { mount =>
      val local = new File(mount, "db")
      // 8 MiB memtables: each writer's version is still in a memtable when it closes.
      val options = StoreOptions(engine = EngineOptions(writeBufferBytes = 8L << 20))
      val checkpoint = new Path(newTempPath("checkpoint").toURI)
      def open(label: String) =
        StoreInstance.open(LocalDirectory(local, stable = true, None), checkpoint, new Configuration(), options, label)
      val random = new Random(31)
      val model = (1 to 3).foldLeft(Map.empty[String, String]) { (model, version) =>
        val rows = (1 to 500).map(i => f"v$version-k$i%04d" -> random.alphanumeric.take(200).mkString).toMap
        val writer = open(s"writer $version")
        try {
          val batch = writer.openBatch(LoadRequest.AtVersion(version - 1L, None))
          try {
            rows.foreach { case (k, v) => batch.put(b(k), b(v)) }
            assert(batch.commit().point.version == version)
          } finally batch.abort()
          if (version == 3) fill(mount, "filler", leaveFree = 0) // the close below cannot flush
        } finally writer.close() // a failed flush here fails the test
        model ++ rows
      }
      assert(new File(mount, "filler").delete())
      Using.resource(open("reader"))(reader => assert(contents(reader, 3) == model))
    }
  }
}
