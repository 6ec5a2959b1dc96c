package txstate.engine

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

final class TransactionTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private def seeded(engine: TxEngine, keys: String*): CommitPoint =
    commitWith(engine)(tx => keys.foreach(k => tx.put(b(k), b(s"v-$k"))))

  test("a transaction reads its own puts, deletes and range deletes over committed rows") {
    withEngine(newTempPath("db")) { engine =>
      seeded(engine, "a", "b", "c", "d", "e")
      val tx = engine.begin()
      tx.put(b("b"), b("new-b"))
      tx.delete(b("a"))
      tx.put(b("f"), b("v-f"))
      tx.deleteRange(b("c"), b("e")) // hides c, d
      tx.put(b("d"), b("again-d"))   // a write after the range delete survives it

      assert(tx.get(b("a")).isEmpty)
      assert(tx.get(b("b")).map(str).contains("new-b"))
      assert(tx.get(b("c")).isEmpty)
      assert(tx.get(b("d")).map(str).contains("again-d"))
      assert(tx.get(b("e")).map(str).contains("v-e"))
      assert(tx.get(b("f")).map(str).contains("v-f"))
      assert(strings(tx.iterator(KeyRange.all)) ==
        Vector("b" -> "new-b", "d" -> "again-d", "e" -> "v-e", "f" -> "v-f"))
      assert(tx.numKeys == 4)
      // Nothing reached RocksDB yet.
      assert(committedStrings(engine).map(_._1) == Vector("a", "b", "c", "d", "e"))
      tx.discard()
    }
  }

  test("the merged iterator interleaves committed and buffered rows in unsigned byte order") {
    withEngine(newTempPath("db")) { engine =>
      commitWith(engine) { tx =>
        Seq(0x00, 0x7f, 0xff).foreach(k => tx.put(bytes(k), bytes(1)))
      }
      val tx = engine.begin()
      Seq(0x01, 0x80, 0xfe).foreach(k => tx.put(bytes(k), bytes(2)))
      tx.put(bytes(0xff, 0x00), bytes(2))
      assert(drain(tx.iterator(KeyRange.all)).map(_._1.map(_ & 0xff)) ==
        Vector(Seq(0x00), Seq(0x01), Seq(0x7f), Seq(0x80), Seq(0xfe), Seq(0xff), Seq(0xff, 0x00)))
      assert(drain(tx.iterator(KeyRange(bytes(0x7f), Some(bytes(0xff))))).map(_._1.map(_ & 0xff)) ==
        Vector(Seq(0x7f), Seq(0x80), Seq(0xfe)))
      assert(drain(tx.iterator(KeyRange.prefix(bytes(0xff)))).map(_._1.map(_ & 0xff)) ==
        Vector(Seq(0xff), Seq(0xff, 0x00)))
      tx.discard()
    }
  }

  test("a closed merged iterator yields nothing more, buffered rows included") {
    withEngine(newTempPath("db")) { engine =>
      seeded(engine, "a", "c")
      val tx = engine.begin()
      Seq("b", "d", "e").foreach(k => tx.put(b(k), b(s"new-$k")))
      val it = tx.iterator(KeyRange.all)
      assert(str(it.next().key) == "a")
      it.close()
      assert(!it.hasNext)
      intercept[NoSuchElementException](it.next())
      val ended = tx.iterator(KeyRange.all)
      assert(ended.hasNext)
      tx.closeIterators() // what commit and abort do
      assert(!ended.hasNext)
    }
  }

  test("an empty value is a present key, distinct from an absent one") {
    withEngine(newTempPath("db")) { engine =>
      commitWith(engine)(_.put(b("k"), Array.emptyByteArray))
      val tx = engine.begin()
      assert(tx.get(b("k")).map(_.length).contains(0))
      assert(tx.exists(b("k")))
      assert(tx.numKeys == 1)
      tx.discard()
    }
  }

  test("numKeys stays exact under overwrites, deletes of absent keys and overlapping range deletes") {
    withEngine(newTempPath("db")) { engine =>
      seeded(engine, "a", "b", "c", "d")
      val tx = engine.begin()
      tx.put(b("a"), b("x"));       assert(tx.numKeys == 4) // overwrite of a committed key
      tx.put(b("e"), b("x"));       assert(tx.numKeys == 5)
      tx.put(b("e"), b("y"));       assert(tx.numKeys == 5) // overwrite of a buffered key
      tx.delete(b("zz"));           assert(tx.numKeys == 5) // absent key
      tx.delete(b("a"));            assert(tx.numKeys == 4)
      tx.delete(b("a"));            assert(tx.numKeys == 4) // already deleted
      tx.deleteRange(b("b"), b("d")); assert(tx.numKeys == 2) // b, c
      tx.deleteRange(b("a"), b("z")); assert(tx.numKeys == 0) // d, e; b, c already gone
      tx.deleteRange(b("z"), b("a")); assert(tx.numKeys == 0) // inverted: no-op
      tx.put(b("c"), b("back"));    assert(tx.numKeys == 1)
      val p = point(2, tx.numKeys)
      engine.commit(tx, p)
      assert(engine.committed.numKeys == 1)
      assert(committedStrings(engine) == Vector("c" -> "back"))
    }
  }

  test("removing every row while iterating raises no ConcurrentModificationException and visits each row once") {
    withEngine(newTempPath("db")) { engine =>
      commitWith(engine)(tx => (0 until 1000 by 2).foreach(i => tx.put(b(f"k$i%05d"), b("c"))))
      val tx = engine.begin()
      (1 until 1000 by 2).foreach(i => tx.put(b(f"k$i%05d"), b("u")))
      tx.deleteRange(b("k00100"), b("k00200"))
      val expected = (0 until 1000).filterNot(i => i >= 100 && i < 200).map(i => f"k$i%05d")
      val seen = Vector.newBuilder[String]
      val it = tx.iterator(KeyRange.all)
      while (it.hasNext) {
        val kv = it.next()
        seen += str(kv.key)
        tx.delete(kv.key)
      }
      assert(seen.result() == expected)
      assert(tx.numKeys == 0)
      assert(drain(tx.iterator(KeyRange.all)).isEmpty)
      engine.commit(tx, point(2, tx.numKeys))
      assert(committedRows(engine).isEmpty)
      assert(engine.committed.numKeys == 0)
    }
  }

  test("inserting rows behind the cursor while iterating does not disturb the rows ahead") {
    withEngine(newTempPath("db")) { engine =>
      seeded(engine, "b", "d", "f")
      val tx = engine.begin()
      tx.put(b("c"), b("v-c"))
      val it = tx.iterator(KeyRange.all)
      val seen = Vector.newBuilder[String]
      it.foreach { kv =>
        seen += str(kv.key)
        tx.put(b("a" + str(kv.key)), b("behind")) // sorts before every row still ahead
      }
      assert(seen.result() == Vector("b", "c", "d", "f"))
      assert(tx.numKeys == 8)
      tx.discard()
    }
  }

  test("an inverted range iterates nothing") {
    withEngine(newTempPath("db")) { engine =>
      seeded(engine, "a", "b", "c")
      val tx = engine.begin()
      tx.put(b("bb"), b("x"))
      assert(drain(tx.iterator(KeyRange(b("c"), Some(b("a"))))).isEmpty)
      tx.discard()
    }
  }

  test("abort leaves no trace: after discard the database and numKeys equal the last commit") {
    withEngine(newTempPath("db")) { engine =>
      val p1 = seeded(engine, "a", "b", "c")
      val before = committedRows(engine)
      val tx = engine.begin()
      tx.put(b("a"), b("changed"))
      tx.put(b("new"), b("x"))
      tx.delete(b("b"))
      tx.deleteRange(b("a"), b("bz"))
      val abandoned = tx.iterator(KeyRange.all)
      abandoned.next()
      tx.discard()
      assert(engine.committed == p1)
      assert(committedRows(engine) == before)
      assert(tx.numKeys == 3)
      assert(tx.isEmpty && tx.uncommittedBytes == 0 && tx.uncommittedEntries == 0)
      assert(strings(tx.iterator(KeyRange.all)).map(_._1) == Vector("a", "b", "c"))
      val fresh = engine.begin()
      assert(fresh.numKeys == 3)
      assert(fresh.get(b("a")).map(str).contains("v-a"))
      fresh.discard()
    }
  }

  test("a commit succeeds while the caller still holds an abandoned iterator") {
    withEngine(newTempPath("db")) { engine =>
      seeded(engine, "a", "b", "c")
      val tx = engine.begin()
      tx.put(b("d"), b("x"))
      val abandoned = tx.iterator(KeyRange.all)
      abandoned.next()
      engine.commit(tx, point(2, tx.numKeys))
      assert(committedStrings(engine).map(_._1) == Vector("a", "b", "c", "d"))
    }
  }

  test("an iterator sees the batch as of its creation: later puts, overwrites, deletes and range deletes do not show") {
    withEngine(newTempPath("db")) { engine =>
      val tx = engine.begin()
      val before = tx.iterator(KeyRange.all)   // nothing written yet
      tx.put(b("1"), b("100"))
      tx.put(b("2"), b("200"))
      val middle = tx.iterator(KeyRange.all)   // after two writes
      tx.put(b("1"), b("101"))                 // an overwrite
      tx.put(b("3"), b("300"))                 // a new key
      val after = tx.iterator(KeyRange.all)
      assert(strings(before).isEmpty)
      assert(strings(middle) == Vector("1" -> "100", "2" -> "200"))
      assert(strings(after) == Vector("1" -> "101", "2" -> "200", "3" -> "300"))
      engine.commit(tx, point(1, tx.numKeys))

      val next = engine.begin()
      val first = next.iterator(KeyRange.all)
      first.next() // half read when the batch changes
      next.delete(b("2"))
      next.deleteRange(b("3"), b("4"))
      next.put(b("4"), b("400"))
      assert(strings(first) == Vector("2" -> "200", "3" -> "300"), "the rest as of creation")
      assert(strings(next.iterator(KeyRange.all)) == Vector("1" -> "101", "4" -> "400"))
      next.discard()
    }
  }
}
