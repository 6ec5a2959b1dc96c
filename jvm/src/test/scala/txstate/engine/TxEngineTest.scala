package txstate.engine

import org.rocksdb.{ColumnFamilyDescriptor, ColumnFamilyHandle, ColumnFamilyOptions, DBOptions, FlushOptions, Options, RocksDB}
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using

final class TxEngineTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private val letters = ('a' to 'j').map(_.toString)

  test("rollbackLastCommit restores exactly the previous version, including rows a range delete removed") {
    withEngine(newTempPath("db")) { engine =>
      val p1 = commitWith(engine)(tx => letters.foreach(k => tx.put(b(k), b(s"v1-$k"))))
      val v1 = committedRows(engine)
      val p2 = commitWith(engine) { tx =>
        tx.deleteRange(b("c"), b("g"))  // c d e f
        tx.put(b("d"), b("v2-d"))      // written again after the range delete
        tx.put(b("z"), b("v2-z"))      // new key
        tx.delete(b("a"))
        tx.put(b("b"), b("v2-b"))      // overwrite
      }
      assert(committedStrings(engine) ==
        Vector("b" -> "v2-b", "d" -> "v2-d", "g" -> "v1-g", "h" -> "v1-h", "i" -> "v1-i", "j" -> "v1-j", "z" -> "v2-z"))
      assert(engine.committed == p2 && p2.numKeys == 7)
      assert(engine.committedBeforeLastCommit.contains(p1))

      assert(engine.rollbackLastCommit() == p1)
      assert(engine.committed == p1)
      assert(committedRows(engine) == v1)
      assert(engine.begin().numKeys == 10)
      assert(engine.committedBeforeLastCommit.isEmpty)
      val second = intercept[IllegalStateException](engine.rollbackLastCommit())
      assert(second.getMessage.contains("no commit to roll back"))

      // The re-run of the batch commits on top of the restored version.
      val again = commitWith(engine)(_.put(b("a"), b("rerun-a")))
      assert(again.version == 2)
      assert(engine.begin().get(b("a")).map(str).contains("rerun-a"))
      assert(engine.begin().get(b("z")).isEmpty)
    }
  }

  test("reads under a block cache too small to keep index partitions find every row") {
    // A read that may not do I/O (RocksDB's keyMayExist) cannot load an evicted index partition: it
    // says "may exist" with no value, and the read must then ask RocksDB for the row itself.
    val dir = newTempPath("db")
    val keys = 60000
    def value(batch: Int, i: Int) = s"v$batch-$i-" + "x" * 48
    // Files of a few MiB (indexes of several partitions), compacted out of level 0, whose blocks are pinned.
    withEngine(dir, EngineOptions(writeBufferBytes = 1L << 20, blockCacheBytes = 1L)) { engine =>
      (0 until 4).foreach(batch => commitWith(engine)(tx => (0 until keys).foreach(i => tx.put(b(f"k$i%06d"), b(value(batch, i))))))
      val tx = engine.begin()
      try {
        val wrong = (0 until keys).filterNot(i => tx.get(b(f"k$i%06d")).map(str).contains(value(3, i)))
        assert(wrong.isEmpty, s"${wrong.size} keys read wrong, first ${wrong.take(3)}")
        assert(tx.get(b("k999999")).isEmpty && tx.numKeys == keys)
      } finally tx.discard()
    }
  }

  test("rolling back survives a flush of the rolled-back commit to disk") {
    withEngine(newTempPath("db"), EngineOptions(writeBufferBytes = 64L << 10)) { engine =>
      val p1 = commitWith(engine)(tx => (0 until 2000).foreach(i => tx.put(b(f"k$i%05d"), Array.fill(64)(1.toByte))))
      val v1 = committedRows(engine)
      // Enough data to fill several memtables: the pre-commit view must come from the snapshot, not the memtable.
      commitWith(engine) { tx =>
        tx.deleteRange(b("k00000"), b("k01000"))
        (0 until 4000).foreach(i => tx.put(b(f"n$i%05d"), Array.fill(64)(2.toByte)))
      }
      assert(engine.rollbackLastCommit() == p1)
      assert(committedRows(engine) == v1)
    }
  }

  test("replaying a transaction's change records gives the same database as committing it") {
    def build(engine: TxEngine): Unit = {
      commitWith(engine)(tx => letters.foreach(k => tx.put(b(k), b(s"v1-$k"))))
      ()
    }
    def changes(tx: Transaction): Unit = {
      tx.put(b("aa"), b("x"))
      tx.deleteRange(b("b"), b("e"))
      tx.put(b("c"), b("after-range"))
      tx.delete(b("h"))
      tx.put(b("i"), b("overwritten"))
      tx.delete(b("nope"))
    }
    withEngine(newTempPath("committed")) { committing =>
      withEngine(newTempPath("replayed"), EngineOptions(replayChunkBytes = 8)) { replaying =>
        build(committing)
        build(replaying)
        val tx = committing.begin()
        changes(tx)
        val records = tx.changes.toVector
        assert(records.head.isInstanceOf[ChangeRecord.DeleteRange], "range deletes come first")
        val p = point(2, tx.numKeys)
        committing.commit(tx, p)
        replaying.replay(records.iterator, p)
        assert(replaying.committed == committing.committed)
        assert(replaying.inFlight.isEmpty)
        assert(committedRows(replaying) == committedRows(committing))
        assert(committedRows(replaying).size == p.numKeys)
      }
    }
  }

  test("wipe drops every row, the commit point and the undo") {
    withEngine(newTempPath("db")) { engine =>
      commitWith(engine)(_.put(b("a"), b("1")))
      commitWith(engine)(_.put(b("b"), b("2")))
      engine.wipe()
      assert(engine.committed == CommitPoint.empty)
      assert(engine.inFlight.isEmpty)
      assert(engine.committedBeforeLastCommit.isEmpty)
      assert(committedRows(engine).isEmpty)
      assert(engine.begin().numKeys == 0)
      intercept[IllegalStateException](engine.rollbackLastCommit())
      val p = commitWith(engine)(_.put(b("c"), b("3")))
      assert(p.version == 1)
      assert(committedStrings(engine) == Vector("c" -> "3"))
    }
  }

  test("startEmptyAt makes an empty store at the given version") {
    withEngine(newTempPath("db")) { engine =>
      commitWith(engine)(_.put(b("a"), b("1")))
      engine.startEmptyAt(41)
      assert(engine.committed.version == 41)
      assert(engine.committed.numKeys == 0)
      assert(engine.committed.checkpointId.isEmpty)
      assert(committedRows(engine).isEmpty)
      val p = commitWith(engine)(_.put(b("b"), b("2")))
      assert(p.version == 42)
    }
  }

  test("the commit point and the data survive closing and reopening the same directory") {
    val dir = newTempPath("db")
    val (last, rows) = withEngine(dir) { engine =>
      commitWith(engine)(tx => letters.foreach(k => tx.put(b(k), b(k))))
      commitWith(engine)(tx => tx.deleteRange(b("b"), b("f")))
      val p = commitWith(engine) { tx => tx.put(b("z"), b("z")); tx.delete(b("a")) }
      (p, committedRows(engine))
    }
    withEngine(dir) { engine =>
      assert(engine.committed == last)
      assert(engine.inFlight.isEmpty)
      assert(committedRows(engine) == rows)
      assert(engine.begin().numKeys == last.numKeys)
      assert(engine.committedBeforeLastCommit.isEmpty, "the undo view does not outlive the process")
    }
  }

  test("an interrupted replay leaves an in-flight marker that survives reopening") {
    val dir = newTempPath("db")
    val options = EngineOptions(replayChunkBytes = 64)
    val p1 = withEngine(dir, options) { engine =>
      val p1 = commitWith(engine)(tx => letters.foreach(k => tx.put(b(k), b(k))))
      val failing = Iterator.tabulate(100) { i =>
        if (i == 50) throw new java.io.IOException("simulated failure while reading the changelog")
        ChangeRecord.Put(b(f"r$i%03d"), Array.fill(16)(7.toByte)): ChangeRecord
      }
      val e = intercept[java.io.IOException](engine.replay(failing, point(2, 60)))
      assert(e.getMessage.contains("simulated"))
      assert(engine.inFlight.contains(2L))
      assert(engine.committed == p1, "the commit point still names the last complete version")
      assert(committedRows(engine).size > 10, "some chunks reached RocksDB: the data is not version 1 any more")
      val refused = intercept[IllegalStateException](engine.begin())
      assert(refused.getMessage.contains("interrupted write of version 2"))
      p1
    }
    withEngine(dir, options) { engine =>
      assert(engine.inFlight.contains(2L))
      assert(engine.committed == p1)
      intercept[IllegalStateException](engine.begin())
      engine.wipe()
      assert(engine.inFlight.isEmpty)
      assert(engine.committed == CommitPoint.empty)
    }
  }

  test("a complete replay clears the in-flight marker") {
    withEngine(newTempPath("db"), EngineOptions(replayChunkBytes = 64)) { engine =>
      val records = Iterator.tabulate(100)(i => ChangeRecord.Put(b(f"r$i%03d"), Array.fill(16)(7.toByte)): ChangeRecord)
      engine.replay(records, point(1, 100))
      assert(engine.inFlight.isEmpty)
      assert(engine.committed == point(1, 100))
      assert(committedRows(engine).size == 100)
    }
  }

  test("commit refuses a transaction that began on another version") {
    withEngine(newTempPath("db")) { engine =>
      val stale = engine.begin()
      stale.put(b("a"), b("1"))
      commitWith(engine)(_.put(b("b"), b("2")))
      val e = intercept[IllegalArgumentException](engine.commit(stale, point(2, 2)))
      assert(e.getMessage.contains("began at version 0 but the store is at 1"))
      assert(committedStrings(engine) == Vector("b" -> "2"))
    }
  }

  test("a closed engine refuses work with a message naming its directory") {
    val dir = newTempPath("db")
    val engine = TxEngine.open(dir)
    engine.close()
    engine.close() // idempotent
    val e = intercept[IllegalStateException](engine.begin())
    assert(e.getMessage.contains(dir.toString))
  }

  test("an engine that cannot read its commit point closes everything it opened, so RocksDB's LOCK is free again") {
    val dir = newTempPath("db")
    TxEngine.open(dir).close()
    // Damage the commit point with real RocksDB: an encoding no build writes.
    RocksDB.loadLibrary()
    Using.Manager { use =>
      val cfOptions = use(new ColumnFamilyOptions())
      val dbOptions = use(new DBOptions())
      val families = Using.resource(new Options())(o => RocksDB.listColumnFamilies(o, dir.getAbsolutePath))
      val descriptors = new java.util.ArrayList[ColumnFamilyDescriptor]()
      families.forEach(name => descriptors.add(new ColumnFamilyDescriptor(name, cfOptions)))
      val handles = new java.util.ArrayList[ColumnFamilyHandle]()
      val db = use(RocksDB.open(dbOptions, dir.getAbsolutePath, descriptors, handles))
      handles.forEach(h => use(h))
      val commit = handles.get(families.asScala.indexWhere(n => new String(n, "UTF-8") == "commit"))
      db.put(commit, b("committed"), java.nio.ByteBuffer.allocate(4).putInt(99).array())
      Using.resource(new FlushOptions().setWaitForFlush(true))(fo => db.flush(fo, commit))
    }.get

    val e = intercept[LocalStateException](TxEngine.open(dir))
    assert(e.errorCode == "TXSTATE_UNREADABLE_COMMIT_POINT" && e.getMessage.contains(dir.toString), e.getMessage)
    // Before the fix the failed open kept RocksDB open: this second open died on the LOCK.
    val again = intercept[LocalStateException](TxEngine.open(dir))
    assert(again.errorCode == "TXSTATE_UNREADABLE_COMMIT_POINT", again.getMessage)
    TxEngine.delete(dir) // what the message tells the user to do
    withEngine(dir)(engine => assert(engine.committed == CommitPoint.empty))
  }
}
