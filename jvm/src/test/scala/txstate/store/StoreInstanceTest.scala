package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.{Background, TempDirectories}
import txstate.checkpoint.{ChangelogHeader, CorruptChangelogException, MissingChangelogException, StoreCheckpoint}
import txstate.engine.{ChangeRecord, CommitPoint, EngineOptions, KeyRange, TxEngine}

final class StoreInstanceTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def str(a: Array[Byte]): String = new String(a, UTF_8)

  /** A fresh checkpoint root (`file:` scheme) shared by the instances of one test. */
  private def newRoot(): Path = new Path(newTempPath("checkpoint").toURI)

  private def open(root: Path, local: File = newTempPath("local"), idsInFileNames: Boolean = false): StoreInstance =
    StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(),
      StoreOptions(idsInFileNames = idsInFileNames), "test store")

  /** The checkpoint files of `root`, read and written as an instance would (real files). */
  private def files(root: Path): StoreCheckpoint = new StoreCheckpoint(root, new Configuration())

  private def closeAll(instances: StoreInstance*): Unit = instances.foreach(_.close())

  /** Commits `writes` on top of the loaded version; returns the new version. */
  private def commit(inst: StoreInstance)(writes: StoreBatch => Unit): Long = {
    val batch = inst.begin()
    writes(batch)
    batch.commit().version
  }

  private def put(pairs: (String, String)*)(tx: StoreBatch): Unit = pairs.foreach { case (k, v) => tx.put(b(k), b(v)) }

  /** Exactly what the loaded version holds. */
  private def contents(inst: StoreInstance): Map[String, String] = {
    val tx = inst.begin()
    val it = tx.iterator(KeyRange.all)
    try it.map(kv => str(kv.key) -> str(kv.value)).toMap
    finally { it.close(); tx.discard() }
  }

  private def localFile(p: Path): File = new File(p.toUri)

  /** Damages one byte of a checkpoint file (and drops Hadoop's checksum sidecar, so our own checks must catch it). */
  private def flipByte(p: Path, at: Array[Byte] => Int, mask: Int): Unit = {
    val f = localFile(p)
    Files.deleteIfExists(new File(f.getParentFile, s".${f.getName}.crc").toPath)
    val bytes = Files.readAllBytes(f.toPath)
    val i = at(bytes)
    bytes(i) = (bytes(i) ^ mask).toByte
    Files.write(f.toPath, bytes)
  }

  /** Versions 1..n, version v adding key k<v> and overwriting "last". */
  private def history(n: Int): Seq[Map[String, String]] =
    (0 to n).map(v => if (v == 0) Map.empty[String, String] else (1 to v).map(i => s"k$i" -> s"v$i").toMap + ("last" -> s"$v"))

  private def writeHistory(inst: StoreInstance, n: Int): Unit =
    (1 to n).foreach { v =>
      assert(commit(inst)(put(s"k$v" -> s"v$v", "last" -> s"$v")) == v)
    }

  test("loading the version the local database already holds reuses it without replaying") {
    val a = open(newRoot())
    try {
      assert(a.load(0, None).path == LoadPath.Reused)
      writeHistory(a, 3)
      val report = a.load(3, None)
      assert(report.path == LoadPath.Reused)
      assert(report.changelogsReplayed == 0)
      assert(contents(a) == history(3)(3))
      assert(a.committed.numKeys == 4)
    } finally closeAll(a)
  }

  test("an instance behind by k versions replays only the missing changelogs") {
    val root = newRoot()
    val a = open(root)
    val b2 = open(root)
    try {
      writeHistory(a, 2)
      val first = b2.load(2, None) // an empty local database is rebuilt (from a snapshot if there is one)
      assert(first.path == LoadPath.Rebuilt && first.changelogsReplayed == 2)
      assert(contents(b2) == history(2)(2))
      (3 to 6).foreach(v => commit(a)(put(s"k$v" -> s"v$v", "last" -> s"$v")))
      val report = b2.load(6, None)
      assert(report.path == LoadPath.CaughtUp)
      assert(report.changelogsReplayed == 4)
      assert(contents(b2) == history(6)(6))
      assert(b2.committed == a.committed)
    } finally closeAll(a, b2)
  }

  test("re-requesting a committed version rolls back locally, and the re-run's result wins") {
    val root = newRoot()
    val a = open(root)
    try {
      writeHistory(a, 3)
      assert(commit(a)(put("first-attempt" -> "x")) == 4)
      val report = a.load(3, None)
      assert(report.path == LoadPath.RolledBack)
      assert(contents(a) == history(3)(3))
      assert(commit(a)(put("rerun" -> "y")) == 4)
      assert(a.load(4, None).path == LoadPath.Reused)
      assert(contents(a) == history(3)(3) + ("rerun" -> "y"))
    } finally closeAll(a)
    val c = open(root)
    try {
      c.load(4, None)
      assert(contents(c) == history(3)(3) + ("rerun" -> "y"), "the checkpoint holds the re-run, not the first attempt")
    } finally closeAll(c)
  }

  test("a version whose changelog another instance overwrote is rebuilt from the checkpoint, never reused") {
    val root = newRoot()
    val a = open(root)
    val other = open(root)
    try {
      writeHistory(a, 2)
      other.load(1, None)
      assert(commit(other)(put("from-b" -> "b")) == 2) // overwrites 2.txlog under checkpoint format v1
      val report = a.load(2, None)
      assert(report.path == LoadPath.Rebuilt)
      assert(contents(a) == history(1)(1) + ("from-b" -> "b"))
      assert(a.committed.checkpointId == other.committed.checkpointId)
    } finally closeAll(a, other)
  }

  test("an instance behind on a lineage that another instance rewrote is rebuilt, not caught up") {
    val root = newRoot()
    val a = open(root)
    val other = open(root)
    try {
      writeHistory(a, 2) // a holds version 2 of its own lineage
      other.load(1, None)
      commit(other)(put("b2" -> "x"))   // rewrites 2.txlog
      commit(other)(put("b3" -> "y"))   // 3.txlog built on the rewritten version 2
      val report = a.load(3, None)
      assert(report.path == LoadPath.Rebuilt)
      assert(contents(a) == history(1)(1) + ("b2" -> "x") + ("b3" -> "y"))
    } finally closeAll(a, other)
  }

  test("a changelog written without its local commit (a crash in between) is replayed; the older version stays loadable") {
    val root = newRoot()
    val a = open(root)
    try {
      writeHistory(a, 2)
      val base = a.committed
      // The crash: version 3's changelog is durable, the local commit never happened.
      val header = ChangelogHeader(3, UUID.randomUUID().toString, base.checkpointId, base.numKeys + 1, System.currentTimeMillis())
      files(root).writeChangelog(header, None, Iterator(ChangeRecord.Put(b("crash"), b("3"))))
      assert(a.committed.version == 2)

      val atTwo = a.load(2, None)
      assert(atTwo.path == LoadPath.Reused)
      assert(contents(a) == history(2)(2))

      val atThree = a.load(3, None)
      assert(atThree.path == LoadPath.CaughtUp && atThree.changelogsReplayed == 1)
      assert(contents(a) == history(2)(2) + ("crash" -> "3"))
      assert(a.committed.numKeys == 4)
    } finally closeAll(a)
  }

  test("an instance that dies after the changelog write restarts on its local directory at a consistent version") {
    val root = newRoot()
    val local = newTempPath("local")
    val a = open(root, local)
    writeHistory(a, 2)
    val base = a.committed
    val tx = a.begin()
    tx.put(b("late"), b("3"))
    // The process dies between the two steps of commit: version 3's changelog is durable (written here
    // as commit writes it), the local commit never happens, and the instance goes away with the batch.
    val header = ChangelogHeader(3, UUID.randomUUID().toString, base.checkpointId, base.numKeys + 1, System.currentTimeMillis())
    files(root).writeChangelog(header, None, Iterator(ChangeRecord.Put(b("late"), b("3"))))
    tx.abort()
    a.close()

    val restarted = open(root, local)
    try {
      assert(restarted.committed.version == 2, "the local directory still holds version 2")
      assert(restarted.load(2, None).path == LoadPath.Reused)
      assert(contents(restarted) == history(2)(2))
      val report = restarted.load(3, None)
      assert(report.path == LoadPath.CaughtUp && report.changelogsReplayed == 1)
      assert(contents(restarted) == history(2)(2) + ("late" -> "3"))
    } finally closeAll(restarted)

    val fresh = open(root)
    try {
      fresh.load(2, None)
      assert(contents(fresh) == history(2)(2))
    } finally closeAll(fresh)
  }

  test("a corrupt changelog fails the load naming the file and version, and leaves a consistent earlier version") {
    val root = newRoot()
    val a = open(root)
    val reader = open(root)
    try {
      writeHistory(a, 3)
      val damaged = files(root).changelogPath(2, None)
      flipByte(damaged, bytes => bytes.length - 14, 0x01) // the last record's value: only the checksum can tell
      val e = intercept[CorruptChangelogException](reader.load(3, None))
      assert(e.getMessage.contains(damaged.toString))
      assert(e.getMessage.contains("2.txlog"))
      assert(reader.committed.version == 1, "version 1 replayed completely before the damaged version 2")
      assert(contents(reader) == history(1)(1))
      assert(reader.load(1, None).path == LoadPath.Reused)
      intercept[CorruptChangelogException](reader.load(3, None))
      assert(contents(reader) == history(1)(1))
      // The instance that wrote version 3 still holds it locally and never re-reads the damaged file.
      assert(a.load(3, None).path == LoadPath.Reused)
      assert(contents(a) == history(3)(3))
    } finally closeAll(a, reader)
  }

  for ((label, mask) <- Seq("to another ASCII character" -> 0x01, "to a non-ASCII byte" -> 0x80)) {
    test(s"a changelog whose id in the header was damaged $label fails the load with an error naming that file") {
      val root = newRoot()
      val a = open(root)
      val reader = open(root)
      try {
        writeHistory(a, 3)
        val damaged = files(root).changelogPath(2, None)
        flipByte(damaged, _ => 4 + 4 + 8 + 2 + 3, mask) // magic, format, version, UTF length, then the id
        val e = intercept[Exception](reader.load(3, None))
        assert(e.getMessage.contains("2.txlog"), s"the error names the damaged file: $e")
        assert(reader.committed.version <= 1)
      } finally closeAll(a, reader)
    }
  }

  test("a local database left with an interrupted replay is rebuilt from the checkpoint, never trusted") {
    val root = newRoot()
    val writer = open(root)
    val local = newTempPath("local")
    try writeHistory(writer, 3) finally closeAll(writer)
    // A previous process died while replaying version 1 into this directory.
    val engine = TxEngine.open(local, EngineOptions(replayChunkBytes = 16))
    try {
      val failing = Iterator.tabulate(10) { i =>
        if (i == 5) throw new java.io.IOException("killed")
        ChangeRecord.Put(b(s"junk$i"), b("x")): ChangeRecord
      }
      intercept[java.io.IOException](engine.replay(failing, CommitPoint(1, Some("lost"), CommitPoint.currentFormatVersion, 0L, 10)))
    } finally engine.close()

    val restarted = open(root, local)
    try {
      val report = restarted.load(3, None)
      assert(report.path == LoadPath.Rebuilt)
      assert(contents(restarted) == history(3)(3), "no rows of the interrupted replay survive")
    } finally closeAll(restarted)
  }

  test("loading a version that was never written names the missing changelog") {
    val root = newRoot()
    val a = open(root)
    val reader = open(root)
    try {
      writeHistory(a, 2)
      val e = intercept[Exception](reader.load(5, None))
      assert(e.getMessage.contains("5.txlog"), e.getMessage)
      assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(_.isInstanceOf[MissingChangelogException]))
      assert(reader.committed.version == 0)
    } finally closeAll(a, reader)
  }

  test("under checkpoint format v2 the requested id picks the lineage, and both attempts of a version stay loadable") {
    val root = newRoot()
    val a = open(root, idsInFileNames = true)
    val other = open(root, idsInFileNames = true)
    try {
      commit(a)(put("base" -> "0"))
      val v1 = a.committed.checkpointId
      commit(a)(put("from-a" -> "a"))
      val idA = a.committed.checkpointId
      other.load(1, v1)
      commit(other)(put("from-b" -> "b"))
      val idB = other.committed.checkpointId
      assert(idA != idB)
      assert(localFile(files(root).changelogPath(2, idA)).isFile && localFile(files(root).changelogPath(2, idB)).isFile)

      assert(a.load(2, idA).path == LoadPath.Reused)
      assert(a.load(2, idB).path == LoadPath.Rebuilt)
      assert(contents(a) == Map("base" -> "0", "from-b" -> "b"))
      a.load(2, idA)
      assert(contents(a) == Map("base" -> "0", "from-a" -> "a"))
      val e = intercept[IllegalStateException](a.load(2, None))
      assert(e.getMessage.contains("without a checkpoint id"))
    } finally closeAll(a, other)
  }

  test("close while a batch is open is deferred: the batch keeps reading and committing, then everything closes once") {
    val root = newRoot()
    val local = newTempPath("local")
    val a = open(root, local)
    writeHistory(a, 2)
    val batch = a.begin()
    batch.put(b("during-close"), b("3"))
    a.close() // Spark unloads the provider while a task still holds the store
    assert(!a.isClosed, "native state must not close under a live batch")
    assert(batch.get(b("k1")).map(str) == history(2)(2).get("k1"), "reads after the close request still see the committed rows")
    assert(batch.iterator(KeyRange.all).size == 4)
    assert(batch.commit().version == 3)
    assert(a.isClosed, "the deferred close happens when the batch ends")
    assert(a.readCommittedView(0)(_.point).isEmpty, "a closed instance offers no view")
    val e = intercept[StoreException](a.begin())
    assert(e.errorCode == "TXSTATE_INSTANCE_CLOSED")
    a.close() // idempotent

    val restarted = open(root, local)
    try assert(contents(restarted) == history(2)(2) + ("during-close" -> "3"))
    finally closeAll(restarted)
  }

  test("every engine entry point fails with a clear error once the engine is closed") {
    val engine = TxEngine.open(newTempPath("local"))
    val tx = engine.begin()
    tx.put(b("a"), b("1"))
    engine.close()
    val reads = Seq[(String, () => Any)](
      "get" -> (() => tx.get(b("zz"))),
      "iterator" -> (() => tx.iterator(KeyRange.all)),
      "commit" -> (() => engine.commit(tx, CommitPoint(1, Some("x"), CommitPoint.currentFormatVersion, 0L, 1))),
      "begin" -> (() => engine.begin()),
      "replay" -> (() => engine.replay(Iterator.empty, CommitPoint(1, Some("x"), CommitPoint.currentFormatVersion, 0L, 0))),
      "wipe" -> (() => engine.wipe()))
    reads.foreach { case (name, call) =>
      val e = intercept[IllegalStateException](call())
      assert(e.getMessage.contains("TXSTATE_ENGINE_CLOSED"), s"$name: ${e.getMessage}")
    }
    assert(engine.nativeMemoryUsed == 0L)
    engine.close() // idempotent
  }

  test("close waits for a running snapshot upload instead of deleting the files it is copying") {
    val root = newRoot()
    val local = newTempPath("local")
    val options = StoreOptions(snapshotInterval = 1)
    val a = StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(), options, "upload test")
    // Enough incompressible data that the upload takes a while.
    val random = new scala.util.Random(7)
    val batch = a.begin()
    (0 until 4000).foreach(i => batch.put(b(f"key$i%06d"), Array.fill(8192)(random.nextInt().toByte)))
    batch.commit()
    val upload = Background("upload under close")(a.uploadSnapshot())
    // Close once the upload is copying (its first file is in sst/), not after a fixed sleep: on a busy
    // machine the uploader may not have started yet, and then close rightly wins and nothing uploads.
    val sst = new File(localFile(root), "sst")
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (!Option(sst.list()).exists(_.nonEmpty) && upload.isAlive && System.nanoTime() < deadline) Thread.sleep(1)
    assert(Option(sst.list()).exists(_.nonEmpty), "the upload started copying")
    a.close()
    assert(upload.result(60).exists(_.version == 1), "the upload ran to its end")
    assert(a.uploadSnapshot().isEmpty, "maintenance after close does nothing")

    val fresh = open(root)
    try {
      assert(fresh.load(1, None).path == LoadPath.Rebuilt)
      assert(fresh.newestSnapshot == 1, "the snapshot uploaded during close is whole and loadable")
    } finally closeAll(fresh)
  }

  test("cleanup removes temporary files that killed writers left, once they are older than the grace period") {
    val root = newRoot()
    val inst = open(root)
    try {
      inst.load(0, None)
      writeHistory(inst, 2)
      val dir = localFile(root)
      val old = new File(dir, s".3.txlog.${UUID.randomUUID()}.tmp")
      val fresh = new File(dir, s".4.txlog.${UUID.randomUUID()}.tmp")
      Files.write(old.toPath, b("partial"))
      Files.write(fresh.toPath, b("partial"))
      assert(old.setLastModified(System.currentTimeMillis() - 20 * 60 * 1000))
      inst.cleanup(minVersionsToRetain = 10, storedFileGraceMs = 10 * 60 * 1000)
      assert(!old.exists(), "a stale temporary file survived cleanup")
      assert(fresh.exists(), "a temporary file a live writer may still rename was deleted")
      assert(new File(dir, "2.txlog").exists())
    } finally closeAll(inst)
  }

  test("loadEmpty starts a new lineage that another instance can rebuild") {
    val root = newRoot()
    val a = open(root)
    val reader = open(root)
    try {
      writeHistory(a, 2)
      a.openBatch(LoadRequest.Empty(5)).discard()
      assert(contents(a).isEmpty)
      assert(commit(a)(put("x" -> "6")) == 6)
      assert(commit(a)(put("y" -> "7")) == 7)
      reader.load(7, None)
      assert(contents(reader) == Map("x" -> "6", "y" -> "7"))
      assert(reader.committed.numKeys == 2)
    } finally closeAll(a, reader)
  }
}
