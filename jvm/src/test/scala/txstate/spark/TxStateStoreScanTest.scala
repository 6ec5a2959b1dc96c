package txstate.spark

import scala.util.Random

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** Prefix scans, range scans and range deletes through Spark's key encoders. */
final class TxStateStoreScanTest extends AnyFunSuite with ProviderFixture {
  private val valueSchema = StructType(Seq(StructField("v", IntegerType)))
  private val value = new RowMaker(valueSchema)

  // ---- prefix scans -----------------------------------------------------------------------------

  private val prefixKeySchema = StructType(Seq(StructField("user", StringType), StructField("ts", LongType)))
  private val prefixKey = new RowMaker(prefixKeySchema)
  private val prefixSchema = StructType(Seq(StructField("user", StringType)))
  private val prefixRow = new RowMaker(prefixSchema)

  private def prefixProvider() =
    newProvider(newCheckpointRoot(), prefixKeySchema, valueSchema, PrefixKeyScanStateEncoderSpec(prefixKeySchema, 1))

  private def scanKeys(store: ReadStateStore, user: String): Set[(String, Long)] =
    pairs(store.prefixScan(prefixRow(user), default), prefixKeySchema, valueSchema)
      .map { case (k, _) => (k(0).asInstanceOf[String], k(1).asInstanceOf[Long]) }.toSet

  test("prefixScan returns exactly the keys with the prefix, committed and uncommitted, and not longer prefixes") {
    withProvider(prefixProvider()) { p =>
      val s0 = p.getStore(0)
      val users = Seq("a", "ab", "b", "", "a\u0000")
      for (u <- users; ts <- Seq(-5L, 0L, 7L)) s0.put(prefixKey(u, ts), value(1), default)
      s0.commit()

      val s1 = p.getStore(1)
      s1.put(prefixKey("a", 100L), value(2), default) // uncommitted, in the prefix
      s1.remove(prefixKey("a", 0L), default)          // uncommitted removal of a committed key
      s1.put(prefixKey("abc", 1L), value(2), default)  // a longer user name: not in the prefix
      assert(scanKeys(s1, "a") == Set(("a", -5L), ("a", 7L), ("a", 100L)))
      assert(scanKeys(s1, "ab") == Set(("ab", -5L), ("ab", 0L), ("ab", 7L)))
      assert(scanKeys(s1, "") == Set(("", -5L), ("", 0L), ("", 7L)))
      assert(scanKeys(s1, "a\u0000") == Set(("a\u0000", -5L), ("a\u0000", 0L), ("a\u0000", 7L)))
      assert(scanKeys(s1, "zzz").isEmpty)
      s1.commit()

      val s2 = p.getReadStore(2)
      assert(scanKeys(s2, "a") == Set(("a", -5L), ("a", 7L), ("a", 100L)))
      assert(scanKeys(s2, "abc") == Set(("abc", 1L)))
      s2.release()
    }
  }

  test("prefixScan on a family without prefix columns is refused with a clear error") {
    withProvider(newProvider(newCheckpointRoot(), prefixKeySchema, valueSchema)) { p =>
      val s = p.getStore(0)
      val e = intercept[UnsupportedOperationException](s.prefixScan(prefixRow("a"), default))
      assert(e.getMessage.contains("prefixScan") && e.getMessage.contains("NoPrefixKeyStateEncoderSpec"))
      s.abort()
    }
  }

  // ---- range scans ------------------------------------------------------------------------------

  private val longKeySchema = StructType(Seq(StructField("ts", LongType)))
  private val longKey = new RowMaker(longKeySchema)
  private val intKeySchema = StructType(Seq(StructField("n", IntegerType), StructField("tag", StringType)))
  private val intKey = new RowMaker(intKeySchema)

  private def longProvider() =
    newProvider(newCheckpointRoot(), longKeySchema, valueSchema, RangeKeyScanStateEncoderSpec(longKeySchema, Seq(0)))
  private def intProvider() =
    newProvider(newCheckpointRoot(), intKeySchema, valueSchema, RangeKeyScanStateEncoderSpec(intKeySchema, Seq(0)))

  private val longs = Seq(Long.MinValue, -1000000000000L, -256L, -255L, -2L, -1L, 0L, 1L, 2L, 255L, 256L,
    1L << 40, Long.MaxValue - 1, Long.MaxValue)

  private def longKeys(it: StateStoreIterator[UnsafeRowPair]): Vector[Long] =
    pairs(it, longKeySchema, valueSchema).map(_._1.head.asInstanceOf[Long])

  test("a range-scan family iterates long keys in numeric order, negatives first, committed and uncommitted") {
    withProvider(longProvider()) { p =>
      val shuffled = new Random(5).shuffle(longs)
      val s0 = p.getStore(0)
      shuffled.take(7).foreach(ts => s0.put(longKey(ts), value(0), default))
      s0.commit()
      val s1 = p.getStore(1)
      shuffled.drop(7).foreach(ts => s1.put(longKey(ts), value(1), default))
      assert(longKeys(s1.iterator(default)) == longs)
      assert(longKeys(s1.rangeScan(None, None, default)) == longs)
      s1.commit()
      val s2 = p.getReadStore(2)
      assert(longKeys(s2.iterator(default)) == longs)
      s2.release()
    }
  }

  test("rangeScan on a long column is start-inclusive and end-exclusive, across zero") {
    withProvider(longProvider()) { p =>
      val s = p.getStore(0)
      longs.foreach(ts => s.put(longKey(ts), value(0), default))
      def scan(from: Option[Long], until: Option[Long]) =
        longKeys(s.rangeScan(from.map(longKey(_)), until.map(longKey(_)), default))
      assert(scan(Some(-256L), Some(2L)) == Seq(-256L, -255L, -2L, -1L, 0L, 1L))
      assert(scan(Some(-3L), Some(-1L)) == Seq(-2L))
      assert(scan(Some(-1L), Some(-1L)).isEmpty)
      assert(scan(None, Some(0L)) == longs.filter(_ < 0))
      assert(scan(Some(0L), None) == longs.filter(_ >= 0))
      assert(scan(Some(Long.MinValue), Some(Long.MaxValue)) == longs.init)
      assert(scan(Some(3L), Some(255L)).isEmpty)
      s.abort()
    }
  }

  test("rangeScan on an int ordering column orders by the number, not by the other key columns") {
    withProvider(intProvider()) { p =>
      val ns = Seq(Int.MinValue, -70000, -1, 0, 1, 127, 128, 70000, Int.MaxValue)
      val s = p.getStore(0)
      new Random(11).shuffle(ns).foreach(n => s.put(intKey(n, s"tag$n"), value(n), default))
      val all = pairs(s.iterator(default), intKeySchema, valueSchema).map(_._1.head.asInstanceOf[Int])
      assert(all == ns)
      val ranged = pairs(s.rangeScan(Some(intKey(-1, "")), Some(intKey(128, "")), default), intKeySchema, valueSchema)
      assert(ranged.map(_._1) == Seq(Seq(-1, "tag-1"), Seq(0, "tag0"), Seq(1, "tag1"), Seq(127, "tag127")))
      assert(ranged.map(_._2.head) == Seq(-1, 0, 1, 127))
      s.abort()
    }
  }

  test("rangeScan with the start after the end returns nothing") {
    withProvider(longProvider()) { p =>
      val s = p.getStore(0)
      try {
        longs.foreach(ts => s.put(longKey(ts), value(0), default))
        assert(longKeys(s.rangeScan(Some(longKey(10L)), Some(longKey(-10L)), default)).isEmpty)
      } finally s.abort()
    }
  }

  test("deleteRange removes exactly [begin, end) and keeps numKeys exact, through commit and reload") {
    val root = newCheckpointRoot()
    withProvider(newProvider(root, longKeySchema, valueSchema, RangeKeyScanStateEncoderSpec(longKeySchema, Seq(0)))) { p =>
      val s0 = p.getStore(0)
      longs.foreach(ts => s0.put(longKey(ts), value(0), default))
      s0.commit()
      val s1 = p.getStore(1)
      s1.put(longKey(-100L), value(1), default)    // uncommitted, inside the range
      s1.deleteRange(longKey(-256L), longKey(2L), default)
      s1.put(longKey(0L), value(2), default)       // written again after the range delete
      val expected = longs.filter(ts => ts < -256L || ts >= 2L) :+ 0L
      assert(longKeys(s1.iterator(default)) == expected.sorted)
      assert(s1.metrics.numKeys == expected.size)
      s1.commit()
    }
    withProvider(newProvider(root, longKeySchema, valueSchema, RangeKeyScanStateEncoderSpec(longKeySchema, Seq(0)))) { p =>
      val s2 = p.getStore(2)
      val expected = (longs.filter(ts => ts < -256L || ts >= 2L) :+ 0L).sorted
      assert(longKeys(s2.iterator(default)) == expected)
      assert(s2.metrics.numKeys == expected.size)
      assert(s2.get(longKey(0L), default).getInt(0) == 2)
      s2.abort()
    }
  }

  test("deleteRange on a family whose keys are not ordered is refused with a clear error") {
    withProvider(newProvider(newCheckpointRoot(), longKeySchema, valueSchema)) { p =>
      val s = p.getStore(0)
      val e = intercept[UnsupportedOperationException](s.deleteRange(longKey(0L), longKey(5L), default))
      assert(e.getMessage.contains("deleteRange"))
      s.abort()
    }
  }
}
