package txstate.migrate

import scala.util.Random

import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

import txstate.spark.ProviderFixture

/** How migrate compares a copy with its source: a row count and an order-independent hash of the rows. */
final class StoreDigestTest extends AnyFunSuite with ProviderFixture {
  private val key = new RowMaker(new StructType().add("k", StringType))
  private val value = new RowMaker(new StructType().add("n", LongType))
  private val rows = (0 until 200).map(i => s"k$i" -> i.toLong)

  private def digest(rows: Seq[(String, Long)]): StoreDigest = {
    val builder = new StoreDigest.Builder
    rows.foreach { case (k, n) => builder.add(key(k), value(n)) }
    assert(builder.rowCount == rows.size)
    builder.result
  }

  test("two providers iterating the same rows in different orders get the same digest") {
    val base = digest(rows)
    assert(base.rows == 200)
    (1 to 5).foreach(seed => assert(digest(new Random(seed).shuffle(rows)) == base))
  }

  test("a changed value, a missing row, values swapped between keys or a duplicated row change the digest") {
    val base = digest(rows)
    val different = Seq(
      "changed value" -> rows.updated(7, "k7" -> 8L),
      "missing row" -> rows.tail,
      "values swapped" -> rows.updated(1, "k1" -> 2L).updated(2, "k2" -> 1L),
      "duplicated row" -> rows.updated(1, rows.head))
    different.foreach { case (what, changed) => assert(digest(changed).hash != base.hash, what) }
  }

  test("the digests of a store's partitions add up to the digest of the whole store") {
    val parts = rows.groupBy(_._2 % 3).values.map(digest)
    assert(parts.foldLeft(StoreDigest.empty)(_ + _) == digest(rows))
    assert(StoreDigest.empty + digest(rows) == digest(rows) && digest(Nil) == StoreDigest.empty)
  }

  test("a digest prints as the migration report shows it: rows and a 16-digit hash") {
    assert(StoreDigest(3, 255).toString == "3 rows (hash 00000000000000ff)")
    assert(StoreDigest(1, -1).toString == "1 rows (hash ffffffffffffffff)")
  }
}
