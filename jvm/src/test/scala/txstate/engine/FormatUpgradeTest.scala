package txstate.engine

import java.io.{ByteArrayOutputStream, DataOutputStream, File}

import scala.collection.immutable.TreeMap
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * A store of storage format 1 (release 0.1.0: plain rows in `data`) opened by this build: its rows
 * read back unstamped, each row moves to `stamped` when a batch writes it (KIP-258's lazy upgrade),
 * and every read, delete, count, rollback and replay treats the two families as one store in which
 * a key lives exactly once.
 */
final class FormatUpgradeTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private val plainFamily = LocalDatabase.plainFamily
  private val stampedFamily = LocalDatabase.stampedFamily

  // "é" is 0xC3 0xA9 in UTF-8: after every ASCII key in RocksDB's unsigned order, before it in a signed one.
  private val plainRows: Vector[(String, String)] =
    (('a' to 'l').map(_.toString) :+ "é").map(k => k -> s"p-$k").toVector
  private val stamp = WriteStamp(3, 1700000000000L)

  /** How the format 1 database came to be; `make` returns the commit point the upgraded engine must read. */
  private sealed trait Origin {
    def name: String
    def make(dir: File, rows: Seq[(Array[Byte], Array[Byte])]): CommitPoint
  }

  /**
   * Exactly what 0.1.0 left: the families `default`, `data` and `commit` only, plain rows, and a
   * commit point in encoding 1 (which names no writer: read as 0.1.0).
   */
  private object Release010 extends Origin {
    val name = "a database 0.1.0 wrote"
    def make(dir: File, rows: Seq[(Array[Byte], Array[Byte])]): CommitPoint = {
      val point = CommitPoint(3, Some("id-3"), 1, 1003L, rows.size, writtenBy = CommitPoint.firstRelease)
      RawRocks.withDatabase(dir, create = Seq(plainFamily, LocalDatabase.commitFamily)) { (db, families) =>
        rows.foreach { case (k, v) => db.put(families(plainFamily), k, v) }
        db.put(families(LocalDatabase.commitFamily), b("committed"), encoding1(point))
      }
      point
    }

    private def encoding1(p: CommitPoint): Array[Byte] = {
      val bytes = new ByteArrayOutputStream()
      val out = new DataOutputStream(bytes)
      out.writeInt(1)
      out.writeLong(p.version)
      out.writeBoolean(p.checkpointId.isDefined)
      p.checkpointId.foreach(out.writeUTF)
      out.writeInt(p.formatVersion)
      out.writeLong(p.commitTimeMs)
      out.writeLong(p.numKeys)
      out.flush()
      bytes.toByteArray
    }
  }

  /** This build told to write format 1 (`EngineOptions.formatVersion`, for benchmarks), over three versions. */
  private object FormatOneEngine extends Origin {
    val name = "an engine writing format 1"
    def make(dir: File, rows: Seq[(Array[Byte], Array[Byte])]): CommitPoint =
      withEngine(dir, EngineOptions(formatVersion = 1)) { engine =>
        def commit(writes: Transaction => Unit): CommitPoint = {
          val tx = engine.begin()
          writes(tx)
          val p = pointOf(tx, formatVersion = 1)
          engine.commit(tx, p)
          p
        }
        val (first, second) = rows.splitAt(rows.size / 2)
        commit(tx => first.foreach { case (k, _) => tx.put(k, b("old")) })
        commit { tx =>
          second.foreach { case (k, v) => tx.put(k, v) }
          tx.put(b("gone"), b("x"))
        }
        commit { tx =>
          first.foreach { case (k, v) => tx.put(k, v) }
          tx.delete(b("gone"))
        }
      }
  }

  private val unstamped = WriteStamp.unknown

  private def formatOneDatabase(origin: Origin, rows: Seq[(String, String)] = plainRows): (File, CommitPoint) = {
    val dir = newTempPath("db")
    val point = origin.make(dir, rows.map { case (k, v) => (b(k), b(v)) })
    assert(RawRocks.keys(dir, plainFamily) == rows.map(_._1).sortWith((x, y) => ByteKeys.compare(b(x), b(y)) < 0),
      "the format 1 rows are plain rows in `data`")
    (dir, point)
  }

  /** The first format 2 batch of most tests: overwrites, an identical rewrite, new keys, deletes. */
  private def firstFormatTwoBatch(tx: Transaction): Unit = {
    tx.put(b("b"), b("s-b"))
    tx.put(b("d"), b("p-d")) // the same bytes: still moves to `stamped`
    tx.put(b("bb"), b("s-bb"))
    tx.put(b("ü"), b("s-ü"))
    tx.delete(b("f"))
    tx.deleteRange(b("h"), b("j")) // h, i
  }

  private val afterFirstBatch: Vector[(String, String, WriteStamp)] = Vector(
    ("a", "p-a", unstamped), ("b", "s-b", stamp), ("bb", "s-bb", stamp), ("c", "p-c", unstamped),
    ("d", "p-d", stamp), ("e", "p-e", unstamped), ("g", "p-g", unstamped), ("j", "p-j", unstamped),
    ("k", "p-k", unstamped), ("l", "p-l", unstamped), ("é", "p-é", unstamped), ("ü", "s-ü", stamp))

  /** Each family's keys in a closed database, checking that no key is in both. */
  private def familiesOf(dir: File): (Vector[String], Vector[String]) = {
    val plain = RawRocks.keys(dir, plainFamily)
    val stamped = RawRocks.keys(dir, stampedFamily)
    assert(plain.intersect(stamped).isEmpty, s"keys in both families: ${plain.intersect(stamped)}")
    (plain, stamped)
  }

  for (origin <- Seq(Release010, FormatOneEngine)) {
    test(s"every row of ${origin.name} reads back with an unknown stamp, and the commit point says format 1") {
      val (dir, written) = formatOneDatabase(origin)
      withEngine(dir) { engine =>
        assert(engine.committed == written)
        assert(engine.committed.formatVersion == 1 && engine.committed.stamp == unstamped)
        assert(viewRows(engine) == plainRows.map { case (k, v) => (k, v, unstamped) })
        assert(engine.readCommittedView(1000)(_.row(b("é")).map(_.written)).get.contains(unstamped))
        val tx = engine.begin()
        assert(tx.numKeys == plainRows.size)
        assert(tx.get(b("c")).map(str).contains("p-c"))
        assert(tx.getAll(Seq(b("l"), b("zz"), b("a"))).map(_.map(str)) == Seq(Some("p-l"), None, Some("p-a")))
        assert(stampedStrings(tx.iterator(KeyRange.all)) == plainRows.map { case (k, v) => (k, v, unstamped) })
        tx.discard()
      }
      // The family this build added for stamped rows exists now (the TTL index's waits for TTL); the rows did not move.
      assert(Set(plainFamily, stampedFamily).subsetOf(RawRocks.familyNames(dir).toSet))
      assert(!RawRocks.familyNames(dir).contains(LocalDatabase.timeIndexFamily))
      assert(familiesOf(dir) == (plainRows.map(_._1) -> Vector.empty))
    }

    test(s"a format 2 batch on ${origin.name} moves only the rows it writes to stamped, each key in one family") {
      val (dir, _) = formatOneDatabase(origin)
      withEngine(dir) { engine =>
        val p = commitStamped(engine, stamp)(firstFormatTwoBatch)
        assert(p.numKeys == afterFirstBatch.size && engine.committed.formatVersion == 2)
        assert(viewRows(engine) == afterFirstBatch)

        // Iterators merge the families (and a transaction's buffer) in unsigned key order, each key once.
        val tx = engine.begin(stamp.copy(batchId = 4))
        tx.put(b("c"), b("t-c"))
        tx.delete(b("a"))
        tx.put(b("bba"), b("t-bba"))
        val merged = strings(tx.iterator(KeyRange.all))
        assert(merged.map(_._1) == Vector("b", "bb", "bba", "c", "d", "e", "g", "j", "k", "l", "é", "ü"))
        assert(merged.toMap.get("c").contains("t-c"))
        assert(strings(tx.iterator(KeyRange(b("b"), Some(b("e"))))).map(_._1) == Vector("b", "bb", "bba", "c", "d"))
        assert(strings(tx.iterator(KeyRange.prefix(b("b")))).map(_._1) == Vector("b", "bb", "bba"))
        assert(strings(tx.iterator(KeyRange(b("l"), None))).map(_._1) == Vector("l", "é", "ü"))
        assert(tx.numKeys == merged.size)
        tx.discard()
      }
      val (plain, stamped) = familiesOf(dir)
      assert(plain == Vector("a", "c", "e", "g", "j", "k", "l", "é"))
      assert(stamped == Vector("b", "bb", "d", "ü"))
      assert(RawRocks.entries(dir, plainFamily).map(e => str(e._2.toArray)) == plain.map(k => s"p-$k"), "plain rows stay plain bytes")
      withEngine(dir)(engine => assert(viewRows(engine) == afterFirstBatch, "after reopening"))
    }

    test(s"deletes and range deletes reach rows of ${origin.name} in either family, and numKeys stays exact") {
      val (dir, _) = formatOneDatabase(origin)
      withEngine(dir) { engine =>
        commitStamped(engine, stamp)(firstFormatTwoBatch)
        val tx = engine.begin(WriteStamp(4, stamp.timeMs + 1))
        tx.deleteRange(b("a"), b("c")) // a (plain), b and bb (stamped)
        tx.delete(b("e"))              // plain
        tx.delete(b("e"))              // again: nothing more to delete
        tx.delete(b("zz"))             // never existed
        tx.delete(b("d"))              // stamped
        tx.put(b("new"), b("n"))
        tx.delete(b("new"))            // written and deleted in one batch: leaves no trace
        tx.deleteRange(b("k"), b("ü")) // k, l (plain) and é (plain); ü is the end, kept
        assert(tx.numKeys == 4)
        val p = pointOf(tx)
        engine.commit(tx, p)
        assert(p.numKeys == 4)
        assert(viewRows(engine) == Vector(("c", "p-c", unstamped), ("g", "p-g", unstamped), ("j", "p-j", unstamped),
          ("ü", "s-ü", stamp)))
        assert(engine.begin().numKeys == 4)
      }
      assert(familiesOf(dir) == (Vector("c", "g", "j") -> Vector("ü")))
    }

    test(s"rolling back the first format 2 commit on ${origin.name} restores its plain rows exactly") {
      val (dir, written) = formatOneDatabase(origin)
      val plainBefore = RawRocks.entries(dir, plainFamily)
      withEngine(dir) { engine =>
        commitStamped(engine, stamp) { tx =>
          firstFormatTwoBatch(tx)
          tx.deleteRange(b("a"), b("b")) // a: a plain row under a range delete
        }
        assert(engine.committedBeforeLastCommit.contains(written))
        assert(engine.rollbackLastCommit() == written)
        assert(engine.committed == written)
        assert(committedStamped(engine) == plainRows.map { case (k, v) => (k, v, unstamped) })
        assert(engine.begin().numKeys == plainRows.size)
      }
      assert(RawRocks.entries(dir, plainFamily) == plainBefore, "the plain family byte for byte")
      assert(RawRocks.entries(dir, stampedFamily).isEmpty, "nothing left in stamped")
      // The re-run of the batch upgrades the same rows again.
      withEngine(dir) { engine =>
        assert(engine.committed == written)
        commitStamped(engine, stamp)(firstFormatTwoBatch)
        assert(viewRows(engine) == afterFirstBatch)
      }
    }

    test(s"undoing early commits on ${origin.name} puts every row back in the family it came from") {
      val (dir, written) = formatOneDatabase(origin)
      val plainBefore = RawRocks.entries(dir, plainFamily)
      withEngine(dir) { engine =>
        val tx = engine.begin(stamp)
        val segments = Vector.newBuilder[ChangeRecord]
        tx.put(b("a"), b("s-a"))
        tx.deleteRange(b("c"), b("e"))
        segments ++= tx.changes
        engine.earlyCommit(tx)
        tx.delete(b("g"))
        tx.put(b("c"), b("s-c"))
        segments ++= tx.changes
        engine.earlyCommit(tx)
        assert(stampedStrings(tx.iterator(KeyRange(b("a"), Some(b("e"))))) ==
          Vector(("a", "s-a", stamp), ("b", "p-b", unstamped), ("c", "s-c", stamp)))
        engine.undoEarlyCommits(segments.result().iterator)
        tx.discard()
        assert(engine.inFlight.isEmpty && engine.committed == written)
        assert(viewRows(engine) == plainRows.map { case (k, v) => (k, v, unstamped) })
      }
      assert(RawRocks.entries(dir, plainFamily) == plainBefore)
      assert(RawRocks.entries(dir, stampedFamily).isEmpty)
    }

    test(s"iterators over ${origin.name} half upgraded merge both families in order, each key once (random ranges)") {
      val rnd = new Random(258)
      implicit val unsigned: Ordering[Vector[Int]] = Ordering.fromLessThan[Vector[Int]](lexicographic(_, _) < 0)
      def key(k: Vector[Int]): Array[Byte] = k.map(_.toByte).toArray
      def randomKey(): Vector[Int] = Vector.fill(1 + rnd.nextInt(3))(Seq(0x00, 0x41, 0x7f, 0x80, 0xc3, 0xff)(rnd.nextInt(6)))
      val keys = Vector.fill(400)(randomKey()).distinct
      val dir = newTempPath("db")
      val written = origin.make(dir, keys.map(k => (key(k), Array[Byte](1))))
      assert(written.numKeys == keys.size)
      var model = TreeMap(keys.map(_ -> (1: Byte)): _*)
      withEngine(dir) { engine =>
        commitStamped(engine, stamp) { tx =>
          keys.foreach { k =>
            rnd.nextInt(10) match {
              case n if n < 4 => tx.put(key(k), Array[Byte](2)); model += k -> 2
              case 4 => tx.delete(key(k)); model -= k
              case _ => ()
            }
          }
        }
        val tx = engine.begin(stamp.copy(batchId = 4))
        (1 to 60).foreach { _ =>
          val k = randomKey()
          if (rnd.nextBoolean()) { tx.put(key(k), Array[Byte](3)); model += k -> 3 }
          else { tx.delete(key(k)); model -= k }
        }
        def seen(it: KeyValueIterator): Vector[(Vector[Int], Byte)] =
          try it.map(kv => (kv.key.toVector.map(_ & 0xff), kv.value.head)).toVector finally it.close()
        assert(seen(tx.iterator(KeyRange.all)) == model.toVector)
        assert(tx.numKeys == model.size)
        (1 to 200).foreach { i =>
          val (x, y) = (randomKey(), randomKey())
          val (from, until) = if (unsigned.lteq(x, y)) (x, y) else (y, x)
          val expected = model.range(from, until).toVector
          assert(seen(tx.iterator(KeyRange(key(from), Some(key(until))))) == expected, s"range $i [$from, $until)")
        }
        tx.discard()
        val committed = engine.readCommittedView(1000)(v => seen(v.range(KeyRange.all))).get
        assert(committed.map(_._1).distinct.size == committed.size, "no key twice")
        assert(committed.size == engine.committed.numKeys)
      }
    }
  }

  test("a format 1 changelog replayed on a format 2 database leaves each key in one family, with the new value") {
    val dir = newTempPath("db")
    withEngine(dir) { engine =>
      commitStamped(engine, stamp)(tx => Seq("a", "b", "c", "d").foreach(k => tx.put(b(k), b(s"s-$k"))))
      // What a changelog of storage format 1 holds for version 2: plain rows, range deletes first.
      val plainChanges = Iterator[ChangeRecord](
        ChangeRecord.DeleteRange(b("c"), b("d")),
        ChangeRecord.Put(b("b"), b("p-b")), // a key that is stamped now
        ChangeRecord.Put(b("e"), b("p-e")),
        ChangeRecord.Delete(b("a")))
      val p2 = CommitPoint(2, Some("id-2"), 1, 1002L, 3, writtenBy = CommitPoint.firstRelease)
      engine.replay(plainChanges, p2)
      assert(engine.committed == p2)
      assert(viewRows(engine) == Vector(("b", "p-b", unstamped), ("d", "s-d", stamp), ("e", "p-e", unstamped)))
    }
    assert(familiesOf(dir) == (Vector("b", "e") -> Vector("d")))
    withEngine(dir) { engine =>
      // And a format 2 version replayed on top moves the key back: still one family.
      val next = WriteStamp(4, stamp.timeMs + 1)
      engine.replay(Iterator(ChangeRecord.Put(b("b"), b("s2-b"))), CommitPoint(3, Some("id-3"), 2, 1003L, 3, next))
      assert(viewRows(engine) == Vector(("b", "s2-b", next), ("d", "s-d", stamp), ("e", "p-e", unstamped)))
    }
    assert(familiesOf(dir) == (Vector("e") -> Vector("b", "d")))
  }
}
