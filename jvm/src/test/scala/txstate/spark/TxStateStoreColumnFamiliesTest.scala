package txstate.spark

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** Column families (transformWithState's layout) and multiple values per key (stream-stream joins, lists). */
final class TxStateStoreColumnFamiliesTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = StructType(Seq(StructField("k", StringType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val otherValueSchema = StructType(Seq(StructField("s", StringType)))
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)
  private val other = new RowMaker(otherValueSchema)
  private val spec = NoPrefixKeyStateEncoderSpec(keySchema)

  private def families(root: String = newCheckpointRoot()) =
    newProvider(root, keySchema, valueSchema, useColumnFamilies = true)

  private def create(store: StateStore, name: String, schema: StructType = valueSchema, multi: Boolean = false): Unit =
    store.createColFamilyIfAbsent(name, keySchema, schema, spec, multi, false)

  private def longs(store: ReadStateStore, family: String): Map[String, Long] =
    pairs(store.iterator(family), keySchema, valueSchema).map { case (k, v) => k.head.toString -> v.head.asInstanceOf[Long] }.toMap

  private def strings(store: ReadStateStore, family: String): Map[String, String] =
    pairs(store.iterator(family), keySchema, otherValueSchema).map { case (k, v) => k.head.toString -> v.head.toString }.toMap

  test("column families keep their rows apart, are listed, and count only user rows in numKeys") {
    withProvider(families()) { p =>
      val s0 = p.getStore(0)
      create(s0, "left")
      create(s0, "right", otherValueSchema)
      create(s0, "left") // idempotent
      s0.put(key("x"), value(1), "left")
      s0.put(key("x"), other("one"), "right")
      s0.put(key("y"), other("two"), "right")
      s0.put(key("x"), value(100), default)
      assert(s0.allColumnFamilyNames == Set(default, "left", "right"))
      assert(longs(s0, "left") == Map("x" -> 1L))
      assert(strings(s0, "right") == Map("x" -> "one", "y" -> "two"))
      assert(longs(s0, default) == Map("x" -> 100L))
      assert(s0.metrics.numKeys == 4)
      s0.commit()

      val s1 = p.getStore(1)
      assert(s1.allColumnFamilyNames == Set(default, "left", "right"))
      assert(s1.get(key("x"), "left").getLong(0) == 1L)
      assert(s1.get(key("y"), "right").getUTF8String(0).toString == "two")
      assert(s1.metrics.numKeys == 4)
      s1.abort()
    }
  }

  test("removing a column family drops its rows; an abort restores the family and its rows") {
    withProvider(families()) { p =>
      val s0 = p.getStore(0)
      create(s0, "left")
      create(s0, "right")
      (1 to 10).foreach(i => s0.put(key(s"k$i"), value(i), "left"))
      s0.put(key("r"), value(0), "right")
      s0.commit()

      val s1 = p.getStore(1)
      assert(s1.removeColFamilyIfExists("left"))
      assert(!s1.removeColFamilyIfExists("never-created"))
      assert(s1.allColumnFamilyNames == Set(default, "right"))
      val e = intercept[IllegalArgumentException](s1.get(key("k1"), "left"))
      assert(e.getMessage.contains("left"))
      assert(s1.metrics.numKeys == 1)
      s1.abort()

      val again = p.getStore(1)
      assert(again.allColumnFamilyNames == Set(default, "left", "right"))
      assert(longs(again, "left") == (1 to 10).map(i => s"k$i" -> i.toLong).toMap)
      assert(again.metrics.numKeys == 11)
      assert(again.removeColFamilyIfExists("left"))
      again.commit()

      val s2 = p.getStore(2)
      assert(s2.allColumnFamilyNames == Set(default, "right"))
      assert(s2.metrics.numKeys == 1)
      // Re-created under the same name, the family starts empty.
      create(s2, "left")
      assert(longs(s2, "left").isEmpty)
      s2.put(key("fresh"), value(7), "left")
      s2.commit()
      val s3 = p.getStore(3)
      assert(longs(s3, "left") == Map("fresh" -> 7L))
      assert(longs(s3, "right") == Map("r" -> 0L))
      s3.abort()
    }
  }

  test("column families survive a new provider rebuilding from the checkpoint") {
    val root = newCheckpointRoot()
    withProvider(families(root)) { p =>
      val s0 = p.getStore(0)
      create(s0, "a")
      create(s0, "b")
      s0.put(key("k"), value(1), "a")
      s0.put(key("k"), value(2), "b")
      s0.commit()
      val s1 = p.getStore(1)
      s1.removeColFamilyIfExists("a")
      create(s1, "c")
      s1.put(key("k"), value(3), "c")
      s1.commit()
    }
    withProvider(families(root)) { p =>
      val s2 = p.getStore(2)
      assert(s2.allColumnFamilyNames == Set(default, "b", "c"))
      create(s2, "b") // Spark registers each family's schema again in every batch
      create(s2, "c")
      assert(longs(s2, "b") == Map("k" -> 2L))
      assert(longs(s2, "c") == Map("k" -> 3L))
      assert(s2.metrics.numKeys == 2)
      s2.abort()
    }
  }

  test("the default column family cannot be removed") {
    withProvider(families()) { p =>
      val s = p.getStore(0)
      intercept[UnsupportedOperationException](s.removeColFamilyIfExists(default))
      s.abort()
    }
  }

  // ---- multiple values per key ------------------------------------------------------------------

  private def listOf(store: ReadStateStore, k: String, family: String = default): List[Long] =
    store.valuesIterator(key(k), family).map(_.getLong(0)).toList

  test("putList, merge and mergeList build a key's list; valuesIterator and iteratorWithMultiValues read it") {
    val root = newCheckpointRoot()
    withProvider(newProvider(root, keySchema, valueSchema, multipleValuesPerKey = true)) { p =>
      val s0 = p.getStore(0)
      s0.putList(key("a"), Array(value(1), value(2)), default)
      s0.merge(key("a"), value(3), default)
      s0.mergeList(key("a"), Array(value(4), value(5)), default)
      s0.merge(key("b"), value(10), default)        // merge into an absent key starts a list
      s0.putList(key("c"), Array(value(7)), default)
      s0.putList(key("c"), Array(value(8), value(9)), default) // putList replaces
      assert(listOf(s0, "a") == List(1L, 2L, 3L, 4L, 5L))
      assert(listOf(s0, "b") == List(10L))
      assert(listOf(s0, "c") == List(8L, 9L))
      assert(listOf(s0, "none").isEmpty)
      assert(s0.get(key("a"), default).getLong(0) == 1L)
      val flat = pairs(s0.iteratorWithMultiValues(default), keySchema, valueSchema)
        .map { case (k, v) => k.head.toString -> v.head.asInstanceOf[Long] }
      assert(flat == Vector("a" -> 1L, "a" -> 2L, "a" -> 3L, "a" -> 4L, "a" -> 5L, "b" -> 10L, "c" -> 8L, "c" -> 9L))
      assert(s0.metrics.numKeys == 3)
      s0.commit()
    }
    withProvider(newProvider(root, keySchema, valueSchema, multipleValuesPerKey = true)) { p =>
      val s1 = p.getStore(1)
      assert(listOf(s1, "a") == List(1L, 2L, 3L, 4L, 5L))
      s1.merge(key("a"), value(6), default)
      s1.remove(key("b"), default)
      assert(listOf(s1, "a") == List(1L, 2L, 3L, 4L, 5L, 6L))
      assert(listOf(s1, "b").isEmpty)
      assert(s1.metrics.numKeys == 2)
      s1.abort()
      val again = p.getStore(1)
      assert(listOf(again, "a") == List(1L, 2L, 3L, 4L, 5L))
      again.abort()
    }
  }

  test("a multi-valued column family sits next to a single-valued one") {
    withProvider(families()) { p =>
      val s = p.getStore(0)
      create(s, "lists", multi = true)
      s.mergeList(key("k"), Array(value(1), value(2)), "lists")
      s.put(key("k"), value(9), default)
      assert(listOf(s, "k", "lists") == List(1L, 2L))
      assert(listOf(s, "k") == List(9L))
      val e = intercept[UnsupportedOperationException](s.merge(key("k"), value(3), default))
      assert(e.getMessage.contains("useMultipleValuesPerKey"))
      s.commit()
      val s1 = p.getStore(1)
      create(s1, "lists", multi = true)
      assert(listOf(s1, "k", "lists") == List(1L, 2L))
      s1.abort()
    }
  }
}
