package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.engine.{EngineOptions, KeyRange, TxEngine}

/**
 * Bounded memory (docs/ARCHITECTURE.md, "Early commits"): early commits of an open version, and
 * undoing them; with `options`' engine (the background-write suite below runs every case again
 * with writes going to the database in the background from the second one on).
 */
class EarlyCommitTest(options: StoreOptions) extends AnyFunSuite with TempDirectories {
  def this() = this(StoreOptions())

  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def str(a: Array[Byte]): String = new String(a, UTF_8)

  private def open(root: Path, local: File = newTempPath("local")): StoreInstance =
    StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(), options,
      "early-commit test store")

  private def closeAll(instances: StoreInstance*): Unit = instances.foreach(_.close())

  private def visible(tx: StoreBatch): Map[String, String] = {
    val it = tx.iterator(KeyRange.all)
    try it.map(kv => str(kv.key) -> str(kv.value)).toMap finally it.close()
  }

  private def contents(inst: StoreInstance): Map[String, String] = {
    val tx = inst.begin()
    try visible(tx) finally tx.discard()
  }

  /** Three committed versions: keys a0..a9 = "v<version>", plus "gone" until version 2. */
  private def threeVersions(inst: StoreInstance): Map[String, String] = {
    (1 to 3).foreach { v =>
      val tx = inst.begin()
      (0 until 10).foreach(i => tx.put(b(s"a$i"), b(s"v$v")))
      if (v == 1) tx.put(b("gone"), b("x")) else tx.delete(b("gone"))
      tx.commit()
    }
    contents(inst)
  }

  /** Writes of an open version in three sub-batches, each committed early: puts, deletes and a range delete. */
  private def commitEarlyThreeTimes(inst: StoreInstance, tx: StoreBatch): Map[String, String] = {
    (0 until 3).foreach { round =>
      (0 until 50).foreach(i => tx.put(b(f"n$round%d-$i%03d"), b(s"r$round")))
      tx.put(b(s"a$round"), b(s"changed$round"))
      if (round == 1) tx.delete(b("a9"))
      if (round == 2) tx.deleteRange(b("a5"), b("a8"))
      assert(tx.earlyCommit().isDefined, s"round $round should commit early")
      assert(tx.uncommittedEntries == 0, "an early commit leaves the buffer empty")
    }
    visible(tx)
  }

  test("abort after three early commits leaves the store exactly at the previous version") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val inst = open(root)
    try {
      val before = threeVersions(inst)
      val keysBefore = inst.committed.numKeys
      val tx = inst.begin()
      val during = commitEarlyThreeTimes(inst, tx)
      // Read-your-writes across sub-batches.
      assert(during("a0") == "changed0" && during("a2") == "changed2" && !during.contains("a9"))
      assert(!during.contains("a5") && !during.contains("a7") && during("a8") == "v3")
      assert(during.count(_._1.startsWith("n")) == 150)
      assert(tx.numKeys == keysBefore + 150 - 1 - 3)
      tx.abort()
      assert(inst.committed.version == 3)
      assert(inst.committed.numKeys == keysBefore)
      assert(contents(inst) == before)
      // The store goes on from version 3 as if nothing happened.
      val next = inst.begin()
      next.put(b("after"), b("abort"))
      assert(next.commit().version == 4)
      assert(contents(inst) == before + ("after" -> "abort"))
    } finally closeAll(inst)
  }

  test("a batch given a checkpoint id early-commits and commits under it; aborting it undoes exactly its writes") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val inst = open(root)
    try {
      val before = threeVersions(inst)
      // Aborting a batch that took an id but never committed early leaves version 3 as it was.
      val aborted = inst.begin()
      aborted.useCheckpointId("chosen-abort")
      aborted.put(b("x"), b("y"))
      aborted.abort()
      assert(contents(inst) == before && inst.committed.version == 3)
      val tx = inst.begin()
      tx.useCheckpointId("chosen-4")
      val expected = commitEarlyThreeTimes(inst, tx)
      // Once a segment exists under the id, another id would orphan it: refused, naming the store.
      val late = intercept[StoreException](tx.useCheckpointId("other"))
      assert(late.getMessage.contains("TXSTATE_CHECKPOINT_ID_TOO_LATE"), late.getMessage)
      val report = tx.commit()
      assert(report.point.checkpointId.contains("chosen-4"))
      assert(contents(inst) == expected)
      // Another instance loads version 4 by that id.
      val reader = open(root)
      try {
        reader.load(4, Some("chosen-4"))
        assert(contents(reader) == expected)
      } finally reader.close()
    } finally closeAll(inst)
  }

  test("a version committed after early commits is replayed exactly by another instance") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val writer = open(root)
    val reader = open(root)
    try {
      threeVersions(writer)
      val tx = writer.begin()
      val expected = commitEarlyThreeTimes(writer, tx) + ("last" -> "not-early")
      tx.put(b("last"), b("not-early"))
      assert(tx.commit().version == 4)
      assert(contents(writer) == expected)
      assert(writer.committed.numKeys == expected.size)
      reader.load(4, None)
      assert(contents(reader) == expected)
      assert(reader.committed.numKeys == expected.size)
    } finally closeAll(writer, reader)
  }

  test("a process that dies with a version in flight recovers to the last committed version") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val local = newTempPath("local")
    val first = open(root, local)
    val before = try threeVersions(first) finally closeAll(first)
    // The process dies during a batch that committed early: no abort, no commit, so the local database
    // keeps the in-flight marker. Made with the engine directly: a live instance never closes under a batch.
    val dead = TxEngine.open(local, options.engine)
    try {
      val tx = dead.begin()
      (0 until 50).foreach(i => tx.put(b(f"n$i%03d"), b("dead")))
      tx.delete(b("a9"))
      dead.earlyCommit(tx)
      assert(dead.inFlight.contains(4L))
    } finally dead.close()
    val restarted = open(root, local)
    try {
      val report = restarted.load(3, None)
      assert(report.path == LoadPath.Rebuilt, "a database with a version in flight must not be trusted")
      assert(contents(restarted) == before)
    } finally closeAll(restarted)
  }

  test("an early commit waits while an iterator is open, so the iterator never loses buffered rows") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val inst = open(root)
    try {
      threeVersions(inst)
      val tx = inst.begin()
      (0 until 20).foreach(i => tx.put(b(f"z$i%02d"), b("buffered")))
      val it = tx.iterator(KeyRange.all)
      assert(tx.earlyCommit().isEmpty)
      val seen = it.map(kv => str(kv.key)).toVector
      it.close()
      assert(seen.count(_.startsWith("z")) == 20)
      assert(tx.earlyCommit().isDefined, "once the iterator is closed the early commit goes ahead")
      tx.abort()
    } finally closeAll(inst)
  }
}

/** Every early-commit case again, with writes going to the database in the background (docs/ARCHITECTURE.md, "Background writes"). */
final class EarlyCommitWithBackgroundWritesTest
    extends EarlyCommitTest(StoreOptions(engine = EngineOptions(backgroundWriteRows = 2))) {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)

  test("a process that dies while its batch writes in the background recovers to the last committed version") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val local = newTempPath("local")
    val options = StoreOptions(engine = EngineOptions(backgroundWriteRows = 2))
    val first = StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(), options, "test")
    val before = try {
      val tx = first.begin()
      (0 until 10).foreach(i => tx.put(b(s"a$i"), b("v1")))
      tx.commit()
      val check = first.begin()
      try { (0 until 10).map(i => check.get(b(s"a$i")).map(new String(_, UTF_8))) } finally check.discard()
    } finally first.close()
    val dead = TxEngine.open(local, options.engine)
    try {
      val tx = dead.begin()
      (0 until 50).foreach(i => tx.put(b(f"a$i%03d"), b("dead")))
      (0 until 10).foreach(i => tx.put(b(s"a$i"), b("dead")))
      assert(dead.inFlight.contains(2L), "writes went to the database before the commit, under the in-flight marker")
    } finally dead.close()
    val restarted = StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(), options, "test")
    try {
      val report = restarted.load(1, None)
      assert(report.path == LoadPath.Rebuilt, "a database holding part of a version must not be trusted")
      val tx = restarted.begin()
      try {
        assert((0 until 10).map(i => tx.get(b(s"a$i")).map(new String(_, UTF_8))) == before)
        assert(tx.get(b("a000")).isEmpty)
      } finally tx.discard()
    } finally restarted.close()
  }
}
