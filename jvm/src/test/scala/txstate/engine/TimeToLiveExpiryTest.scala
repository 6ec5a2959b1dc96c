package txstate.engine

import java.io.File

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * What one TTL expiry deletes, and what it leaves in the TTL index (`by_time`): exactly the rows
 * past their TTL, counted from their last write (or from when TTL was switched on, for rows of
 * unknown age), and an index that shrinks by what the cutoff passed. Sizes are checked by counting
 * index entries with plain RocksDB after the engine closed: no timing.
 */
final class TimeToLiveExpiryTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private def ttl(ms: Long): Option[TimeToLive] = Some(TimeToLive(ms, _ => true))

  /** The TTL index of a closed engine's directory, as (write time, row key). */
  private def index(dir: File): Vector[(Long, String)] =
    RawRocks.entries(dir, LocalDatabase.timeIndexFamily).map { case (k, _) =>
      (TimeIndex.timeOf(k.toArray), str(TimeIndex.rowKeyOf(k.toArray)))
    }

  private def old(i: Int) = b(f"old-$i%05d")
  private def young(i: Int) = b(f"young-$i%05d")

  /** 1,000 rows written at 1,000 and 9,000 at 2,000, with a TTL of 5,000 on from the start. */
  private def tenThousandRows(dir: File): Unit = withEngine(dir) { engine =>
    commitStamped(engine, WriteStamp(0, 1000), ttl(5000))(tx => (0 until 1000).foreach(i => tx.put(old(i), b("o"))))
    commitStamped(engine, WriteStamp(1, 2000), ttl(5000))(tx => (0 until 9000).foreach(i => tx.put(young(i), b("y"))))
    val quiet = engine.begin(WriteStamp(2, 5999), ttl(5000)) // the old rows are 4,999 ms old: nothing expires
    assert(quiet.expiredEntries == 0 && quiet.numKeys == 10000)
    engine.commit(quiet, pointOf(quiet))
  }

  test("expiring 1k of 10k rows deletes exactly those 1k, and the commit shrinks the TTL index by them") {
    val dir = newTempPath("db")
    tenThousandRows(dir)
    assert(index(dir).size == 10000, "one entry per row; the quiet batch removed none")

    withEngine(dir) { engine =>
      val tx = engine.begin(WriteStamp(3, 6000), ttl(5000))
      assert(tx.expiredEntries == 1000)
      assert(tx.numKeys == 9000)
      assert(tx.get(old(0)).isEmpty && tx.get(old(999)).isEmpty && tx.get(young(0)).isDefined)
      assert(strings(tx.iterator(KeyRange.prefix(b("old-")))).isEmpty)
      val expiredDeletes = tx.changes.collect { case ChangeRecord.Delete(k) => str(k) }.toSet
      assert(expiredDeletes == (0 until 1000).map(i => str(old(i))).toSet, "the changelog deletes exactly the expired rows")
      val p = pointOf(tx)
      engine.commit(tx, p)
      assert(p.numKeys == 9000)
      assert(viewRows(engine).map(_._3).distinct == Vector(WriteStamp(1, 2000)))
    }
    val after = index(dir)
    assert(after.size == 9000)
    assert(after.map(_._1).distinct == Vector(2000L))
    assert(RawRocks.keys(dir, LocalDatabase.stampedFamily).forall(_.startsWith("young-")))
  }

  test("a row rewritten before its TTL passes stays, and its stale index entry goes once the cutoff passes it") {
    val dir = newTempPath("db")
    tenThousandRows(dir)
    withEngine(dir) { engine =>
      commitStamped(engine, WriteStamp(3, 3000), ttl(5000))(tx => (0 until 500).foreach(i => tx.put(old(i), b("o2"))))
    }
    assert(index(dir).size == 10500, "a rewrite adds an entry and leaves the old one (stale)")
    withEngine(dir) { engine =>
      val tx = engine.begin(WriteStamp(4, 6000), ttl(5000))
      assert(tx.expiredEntries == 500)
      assert(tx.get(old(0)).map(str).contains("o2") && tx.get(old(500)).isEmpty)
      engine.commit(tx, pointOf(tx))
      assert(engine.committed.numKeys == 9500)
    }
    val after = index(dir)
    assert(after.size == 9500, "the 500 expired rows' entries and the 500 stale ones are gone")
    assert(after.count(_._1 == 3000L) == 500 && after.count(_._1 == 2000L) == 9000)
  }

  test("a row expires in the batch where its age reaches the TTL, not a millisecond before") {
    withEngine(newTempPath("db")) { engine =>
      commitStamped(engine, WriteStamp(0, 1000), ttl(100))(_.put(b("a"), b("1")))
      val early = engine.begin(WriteStamp(1, 1099), ttl(100))
      assert(early.expiredEntries == 0 && early.get(b("a")).isDefined)
      early.discard()
      val due = engine.begin(WriteStamp(1, 1100), ttl(100))
      assert(due.expiredEntries == 1 && due.get(b("a")).isEmpty && due.numKeys == 0)
      engine.commit(due, pointOf(due))
      assert(viewRows(engine).isEmpty)
    }
  }

  test("rows TTL does not apply to never expire") {
    val registry = TimeToLive(10, key => !str(key).startsWith("registry/"))
    withEngine(newTempPath("db")) { engine =>
      commitStamped(engine, WriteStamp(0, 1000), Some(registry)) { tx =>
        tx.put(b("registry/schema"), b("s"))
        tx.put(b("row"), b("r"))
      }
      Seq(100000L, 10000000L).zipWithIndex.foreach { case (now, i) =>
        val tx = engine.begin(WriteStamp(1 + i, now), Some(registry))
        assert(tx.expiredEntries == (if (i == 0) 1 else 0))
        assert(tx.get(b("registry/schema")).isDefined)
        engine.commit(tx, pointOf(tx))
      }
      assert(viewRows(engine).map(_._1) == Vector("registry/schema"))
    }
  }

  test("rows of unknown age count from the batch that switched TTL on; rows of known age from their write") {
    val dir = newTempPath("db")
    withEngine(dir) { engine =>
      commitStamped(engine, WriteStamp.unknown)(_.put(b("untimed"), b("u")))  // no batch time: age unknown
      commitStamped(engine, WriteStamp(1, 1000))(_.put(b("timed"), b("t")))   // TTL off, but stamped
      val on = engine.begin(WriteStamp(2, 5000), ttl(100))
      assert(on.timeIndexSinceMs.contains(5000L))
      assert(on.expiredEntries == 1 && on.get(b("timed")).isEmpty, "4,000 ms old, TTL 100: gone at once")
      assert(on.get(b("untimed")).isDefined, "unknown age: counts from 5,000")
      engine.commit(on, pointOf(on))
      assert(engine.committed.timeIndexSinceMs.contains(5000L))
    }
    assert(index(dir) == Vector(5000L -> "untimed"))
    withEngine(dir) { engine => // the start of TTL lives in the commit point: it survives reopening
      val notYet = engine.begin(WriteStamp(3, 5099), ttl(100))
      assert(notYet.expiredEntries == 0)
      engine.commit(notYet, pointOf(notYet))
      val due = engine.begin(WriteStamp(4, 5100), ttl(100))
      assert(due.expiredEntries == 1 && due.numKeys == 0)
    }
  }

  test("switching TTL off drops the whole index in a commit that cannot be rolled back; switching on again starts anew") {
    val dir = newTempPath("db")
    withEngine(dir) { engine =>
      commitStamped(engine, WriteStamp.unknown)(_.put(b("untimed"), b("u")))
      commitStamped(engine, WriteStamp(1, 1000), ttl(100))(tx => (0 until 50).foreach(i => tx.put(old(i), b("o"))))
      assert(engine.committedBeforeLastCommit.isDefined)
      commitStamped(engine, WriteStamp(2, 1050))(_.put(b("off"), b("x")))
      assert(engine.committed.timeIndexSinceMs.isEmpty)
      assert(engine.committedBeforeLastCommit.isEmpty, "a commit that dropped the index is not kept for rollback")
      assert(engine.oldestWriteMs(_ => true).isEmpty)
    }
    assert(index(dir).isEmpty)
    withEngine(dir) { engine =>
      val on = engine.begin(WriteStamp(3, 9000), ttl(100))
      assert(on.timeIndexSinceMs.contains(9000L), "unknown ages count from the new switch-on, not the first")
      assert(on.expiredEntries == 51, "the 50 rows of 1,000 and the row of 1,050")
      assert(on.get(b("untimed")).isDefined)
      engine.commit(on, pointOf(on))
      assert(engine.oldestWriteMs(_ => true).contains(9000L))
    }
    assert(index(dir) == Vector(9000L -> "untimed"))
  }

  test("replaying the version that switched TTL on indexes the rows from before it: a rebuild expires what the original does") {
    val versions = Vector.newBuilder[(Vector[ChangeRecord], CommitPoint)]
    def batch(engine: TxEngine, stamp: WriteStamp, rule: Option[TimeToLive])(writes: Transaction => Unit): Unit = {
      val tx = engine.begin(stamp, rule)
      writes(tx)
      val changes = tx.changes.toVector
      val p = pointOf(tx)
      engine.commit(tx, p)
      versions += changes -> p
    }
    withEngine(newTempPath("original")) { original =>
      batch(original, WriteStamp.unknown, None)(_.put(b("untimed"), b("u")))
      batch(original, WriteStamp(1, 1000), None)(tx => Seq("a", "b").foreach(k => tx.put(b(k), b(k))))
      batch(original, WriteStamp(2, 1500), ttl(1000))(_.put(b("c"), b("c"))) // TTL on from 1,500
      withEngine(newTempPath("rebuilt"), EngineOptions(replayChunkBytes = 16)) { rebuilt =>
        versions.result().foreach { case (changes, p) => rebuilt.replay(changes.iterator, p) }
        assert(rebuilt.committed == original.committed)
        assert(committedStamped(rebuilt) == committedStamped(original))
        // a and b were written at 1,000; c at 1,500; the untimed row counts from 1,500.
        for ((now, expired) <- Seq(1999L -> 0, 2000L -> 2, 2499L -> 2, 2500L -> 4)) {
          val seen = Seq(original, rebuilt).map { engine =>
            val tx = engine.begin(WriteStamp(3, now), ttl(1000))
            try ((tx.expiredEntries, strings(tx.iterator(KeyRange.all)))) finally tx.discard()
          }
          assert(seen.head._1 == expired, s"the original at $now")
          assert(seen(1) == seen.head, s"the rebuilt engine at $now")
        }
      }
    }
  }

  test("TTL without a batch timestamp is refused, naming the store's directory") {
    val dir = newTempPath("db")
    withEngine(dir) { engine =>
      val e = intercept[LocalStateException](engine.begin(WriteStamp.unknown, ttl(100)))
      assert(e.errorCode == "TXSTATE_TTL_WITHOUT_BATCH_TIME" && e.getMessage.contains(dir.toString), e.getMessage)
      assert(engine.begin(WriteStamp(0, 1000), ttl(100)).expiredEntries == 0)
    }
  }

  test("a batch that switched TTL on and was aborted, then a rollback, leaves no row of the restored version out of the index") {
    // Batch 1 is committed, batch 2 (same batch time, TTL switched on) builds the index and aborts,
    // and then Spark re-runs batch 1 (with TTL on now: a restart with the new setting). The index
    // batch 2 built saw batch 1's rows, not the ones the rollback restored.
    withEngine(newTempPath("db")) { engine =>
      commitStamped(engine, WriteStamp(0, 1000))(tx => Seq("a", "b").foreach(k => tx.put(b(k), b("0"))))
      commitStamped(engine, WriteStamp(1, 2000)) { tx =>
        tx.delete(b("a"))
        tx.put(b("b"), b("1"))
      }
      val aborted = engine.begin(WriteStamp(2, 2000), ttl(100))
      assert(aborted.expiredEntries == 0, "b was written at 2,000")
      aborted.discard()
      engine.rollbackLastCommit()
      val rerun = engine.begin(WriteStamp(1, 2000), ttl(100))
      assert(rerun.expiredEntries == 2, "a and b, written at 1,000, are 1,000 ms old with a TTL of 100")
      assert(strings(rerun.iterator(KeyRange.all)).isEmpty)
    }
  }
}
