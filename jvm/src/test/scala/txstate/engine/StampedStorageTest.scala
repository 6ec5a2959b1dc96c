package txstate.engine

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.compat.ScalaLibrary.Using

/**
 * Storage format 2 (KIP-258): every committed row carries the write stamp of the batch that last
 * wrote it, through commits, replays, reopening and snapshots, and the stamp encoding round-trips.
 */
final class StampedStorageTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private val t0 = 1700000000000L // epoch milliseconds, late 2023

  private def rowOf(engine: TxEngine, key: String): Option[(String, WriteStamp)] =
    engine.readCommittedView(1000)(_.row(b(key)).map(kv => (str(kv.value), kv.written))).get

  test("committed rows carry the stamp of the batch that last wrote them; untouched rows keep theirs") {
    withEngine(newTempPath("db")) { engine =>
      val s0 = WriteStamp(0, t0)
      val s1 = WriteStamp(1, t0 + 60000)
      commitStamped(engine, s0)(tx => Seq("a", "b", "c", "d").foreach(k => tx.put(b(k), b(s"0-$k"))))
      assert(viewRows(engine) == Vector(("a", "0-a", s0), ("b", "0-b", s0), ("c", "0-c", s0), ("d", "0-d", s0)))

      val p1 = commitStamped(engine, s1) { tx =>
        tx.put(b("b"), b("1-b"))
        tx.put(b("d"), b("0-d")) // the same bytes again: still a write, so the stamp moves on
        tx.delete(b("c"))
        tx.put(b("e"), b("1-e"))
      }
      assert(engine.committed.stamp == s1 && p1.stamp == s1)
      assert(viewRows(engine) == Vector(("a", "0-a", s0), ("b", "1-b", s1), ("d", "0-d", s1), ("e", "1-e", s1)))
      assert(rowOf(engine, "a").contains("0-a" -> s0))
      assert(rowOf(engine, "b").contains("1-b" -> s1))
      assert(rowOf(engine, "c").isEmpty)
      assert(engine.readCommittedView(1000)(_.get(b("d")).map(str)).get.contains("0-d"))
      val someKeys = engine.readCommittedView(1000)(v => stampedStrings(v.range(KeyRange(b("b"), Some(b("e")))))).get
      assert(someKeys == Vector(("b", "1-b", s1), ("d", "0-d", s1)))

      // A batch without a timestamp (outside a streaming query) writes unknown stamps; it never guesses.
      commitStamped(engine, WriteStamp.unknown)(_.put(b("a"), b("2-a")))
      assert(rowOf(engine, "a").contains("2-a" -> WriteStamp.unknown))
      assert(rowOf(engine, "b").contains("1-b" -> s1))
    }
  }

  test("a transaction shows committed rows with their stamps and its own writes as unstamped until they commit") {
    withEngine(newTempPath("db")) { engine =>
      val s0 = WriteStamp(0, t0)
      commitStamped(engine, s0)(tx => Seq("a", "b").foreach(k => tx.put(b(k), b("0"))))
      val tx = engine.begin(WriteStamp(1, t0 + 1))
      tx.put(b("b"), b("1"))
      tx.put(b("c"), b("1"))
      assert(stampedStrings(tx.iterator(KeyRange.all)) ==
        Vector(("a", "0", s0), ("b", "1", WriteStamp.unknown), ("c", "1", WriteStamp.unknown)))
      // An early commit moves the buffer into RocksDB: from there the rows read back with the batch's stamp.
      engine.earlyCommit(tx)
      assert(stampedStrings(tx.iterator(KeyRange.all)) ==
        Vector(("a", "0", s0), ("b", "1", WriteStamp(1, t0 + 1)), ("c", "1", WriteStamp(1, t0 + 1))))
      engine.commit(tx, pointOf(tx))
      assert(viewRows(engine) == Vector(("a", "0", s0), ("b", "1", WriteStamp(1, t0 + 1)), ("c", "1", WriteStamp(1, t0 + 1))))
    }
  }

  test("replaying each version's changes with its commit point gives the same rows, stamps and commit points") {
    // Versions as a batch writes them: overwrites, deletes, range deletes, a write after a range delete, untimed batches.
    val batches: Seq[(WriteStamp, Transaction => Unit)] = Seq(
      WriteStamp(0, t0) -> (tx => ('a' to 'l').foreach(c => tx.put(b(c.toString), b(s"0-$c")))),
      WriteStamp(1, t0 + 10) -> { tx =>
        tx.deleteRange(b("c"), b("g"))
        tx.put(b("d"), b("1-d"))
        tx.put(b("b"), b("1-b"))
        tx.delete(b("k"))
        tx.put(b("z"), Array.emptyByteArray)
      },
      WriteStamp.unknown -> (tx => tx.put(b("a"), b("2-a"))),
      WriteStamp(3, t0 + 30) -> { tx =>
        tx.put(b("a"), b("3-a"))
        tx.deleteRange(b("h"), b("j"))
      })
    withEngine(newTempPath("committed")) { committing =>
      withEngine(newTempPath("replayed"), EngineOptions(replayChunkBytes = 16)) { replaying =>
        batches.foreach { case (stamp, writes) =>
          val tx = committing.begin(stamp)
          writes(tx)
          val changes = tx.changes.toVector
          val p = pointOf(tx)
          committing.commit(tx, p)
          replaying.replay(changes.iterator, p)
          assert(replaying.committed == committing.committed)
          assert(viewRows(replaying) == viewRows(committing), s"after version ${p.version}")
          assert(viewRows(replaying).size == p.numKeys)
        }
        assert(viewRows(replaying) == Vector(
          ("a", "3-a", WriteStamp(3, t0 + 30)), ("b", "1-b", WriteStamp(1, t0 + 10)), ("d", "1-d", WriteStamp(1, t0 + 10)),
          ("g", "0-g", WriteStamp(0, t0)), ("j", "0-j", WriteStamp(0, t0)), ("l", "0-l", WriteStamp(0, t0)),
          ("z", "", WriteStamp(1, t0 + 10))))
      }
    }
  }

  test("stamps survive closing and reopening, and a snapshot restored into another engine") {
    val dir = newTempPath("db")
    val snapshot = newTempPath("snapshot")
    val expected = withEngine(dir) { engine =>
      commitStamped(engine, WriteStamp(4, t0))(tx => Seq("a", "b").foreach(k => tx.put(b(k), b(k))))
      commitStamped(engine, WriteStamp(5, t0 + 5))(_.put(b("b"), b("b5")))
      engine.checkpointTo(snapshot)
      viewRows(engine)
    }
    assert(expected == Vector(("a", "a", WriteStamp(4, t0)), ("b", "b5", WriteStamp(5, t0 + 5))))
    withEngine(dir) { engine =>
      assert(engine.committed.stamp == WriteStamp(5, t0 + 5))
      assert(viewRows(engine) == expected)
    }
    withEngine(newTempPath("restored")) { engine =>
      engine.restore { into =>
        Using.resource(Files.list(snapshot.toPath))(_.forEach(f => Files.copy(f, into.toPath.resolve(f.getFileName))))
      }
      assert(engine.committed.version == 2)
      assert(viewRows(engine) == expected)
    }
  }

  test("a commit point keeps the batch stamp, the TTL index start and the writing release") {
    val p = CommitPoint(7, Some("id-7"), 2, t0, 42, WriteStamp(6, t0 - 1), Some(t0 - 500), "1.2.3")
    assert(CommitPoint.fromBytes(p.toBytes) == p)
    val untimed = CommitPoint(1, None, 2, 0, 0)
    assert(CommitPoint.fromBytes(untimed.toBytes) == untimed.copy(writtenBy = Release.writer))
    assert(untimed.stamp == WriteStamp.unknown && untimed.timeIndexSinceMs.isEmpty)
  }

  test("stamped values round-trip unknown, zero and extreme stamps around any value") {
    val stamps = Seq(
      WriteStamp.unknown, WriteStamp(0, 0), WriteStamp(-1, 0), WriteStamp(0, -1), WriteStamp(1, 1),
      WriteStamp(127, 127), WriteStamp(128, 128), WriteStamp(16383, t0), WriteStamp(16384, t0),
      WriteStamp(Int.MaxValue.toLong + 1, 4102444800000L), // year 2100
      WriteStamp(Long.MaxValue - 1, Long.MaxValue - 1), WriteStamp(Long.MaxValue, Long.MaxValue),
      WriteStamp(Long.MinValue, Long.MinValue), WriteStamp(-2, -2))
    val values = Seq(Array.emptyByteArray, Array[Byte](0), Array[Byte](-1, -128, 127), Array.tabulate[Byte](300)(_.toByte))
    for (stamp <- stamps; value <- values) {
      val stored = StampedValues.encode(stamp, value)
      val row = StampedValues.decode(b("k"), stored)
      assert(row.written == stamp, s"stamp $stamp")
      assert(row.value.sameElements(value) && str(row.key) == "k", s"value of ${value.length} bytes behind $stamp")
      assert(StampedValues.stampOf(stored) == stamp)
    }
    // What the format promises about size: unknown costs 2 bytes, today's stamps of early batches about 8.
    assert(StampedValues.encode(WriteStamp.unknown, Array.emptyByteArray).length == 2)
    assert(StampedValues.encode(WriteStamp(16382, t0), Array.emptyByteArray).length == 8)
    assert(StampedValues.encode(WriteStamp(Long.MaxValue, Long.MaxValue), Array.emptyByteArray).length == 20)
  }

  test("a stored value cut inside its stamp is reported as damaged, never read as a row") {
    val stored = StampedValues.encode(WriteStamp(300, t0), b("value"))
    for (cut <- Seq(0, 1, 2, 5)) {
      val e = intercept[LocalStateException](StampedValues.decode(b("k"), stored.take(cut)))
      assert(e.errorCode == "TXSTATE_DAMAGED_VALUE", s"cut at $cut")
    }
    // Ten continuation bytes: more than a 64-bit varint can hold.
    val tooLong = Array.fill[Byte](11)(0x80.toByte)
    assert(intercept[LocalStateException](StampedValues.stampOf(tooLong)).errorCode == "TXSTATE_DAMAGED_VALUE")
  }

  test("TTL index keys sort by write time, then row key, and the range before a cutoff ends just before it") {
    val keys = Seq(TimeIndex.key(t0, b("b")), TimeIndex.key(t0 + 1, b("a")), TimeIndex.key(t0, b("a")), TimeIndex.key(0, b("z")))
    val sorted = keys.sortWith((x, y) => ByteKeys.compare(x, y) < 0)
    assert(sorted.map(k => (TimeIndex.timeOf(k), str(TimeIndex.rowKeyOf(k)))) ==
      Seq(0L -> "z", t0 -> "a", t0 -> "b", (t0 + 1) -> "a"))
    val before = TimeIndex.before(t0 + 1)
    assert(before.contains(TimeIndex.key(t0, Array.fill[Byte](40)(-1))))
    assert(!before.contains(TimeIndex.key(t0 + 1, Array.emptyByteArray)))
    assert(!before.contains(TimeIndex.key(t0 + 1, b("a"))))
    assert(TimeIndex.before(-5).until.get.sameElements(TimeIndex.key(0, Array.emptyByteArray)), "a cutoff before 1970 holds nothing")
    assert(TimeIndex.everything.contains(TimeIndex.key(Long.MaxValue, b("a"))))
  }
}
