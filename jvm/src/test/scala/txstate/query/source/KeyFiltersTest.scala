package txstate.query.source

import org.apache.spark.sql.sources._
import org.apache.spark.sql.types.{IntegerType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

import txstate.spark.ProviderFixture

/** Spark's pushed filters as a read of each partition's store (KeyFilters): never more narrow than the filters. */
final class KeyFiltersTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = new StructType().add("user", StringType).add("day", IntegerType)
  private val key = new RowMaker(keySchema)
  private val first = new RowMaker(new StructType().add("user", StringType))

  private def plan(filters: Filter*): KeyFilters.Plan = KeyFilters.plan(keySchema, filters)

  test("equality on every key column looks up that key, and says which filters it used") {
    val filters = Seq(EqualTo("key.user", "ann"), EqualTo("key.`day`", 3), GreaterThan("value.n", 5))
    assert(plan(filters: _*) == KeyFilters.Plan(KeyRead.Keys(Seq(key("ann", 3))), None, filters.take(2)))
    assert(plan(EqualNullSafe("key.user", "ann"), EqualTo("key.day", 3)).read == KeyRead.Keys(Seq(key("ann", 3))))
  }

  test("IN lists on the key columns look up every combination, narrowed by the other filters on a column") {
    val all = plan(In("key.user", Array("a", "b")), In("key.day", Array(1, 2)))
    assert(all.read == KeyRead.Keys(Seq(key("a", 1), key("a", 2), key("b", 1), key("b", 2))))
    assert(all.read.describe == "4 key lookups")
    val narrowed = plan(In("key.user", Array("a", "b")), In("key.day", Array(1, 2)), EqualTo("key.user", "b"))
    assert(narrowed.read == KeyRead.Keys(Seq(key("b", 1), key("b", 2))) && narrowed.used.size == 3)
    val contradicting = plan(EqualTo("key.user", "a"), EqualTo("key.user", "b"), EqualTo("key.day", 1))
    assert(contradicting.read == KeyRead.Keys(Nil), "no key can match both: none is read")
  }

  test("equality on the leading key columns reads that prefix") {
    val p = plan(EqualTo("key.user", "ann"), LessThan("key.day", 9))
    assert(p == KeyFilters.Plan(KeyRead.Prefix(first("ann"), 1), None, Seq(EqualTo("key.user", "ann"))))
    assert(p.read.describe == "prefix on 1 leading key column")
    assert(plan(EqualTo("key.day", 3)).read == KeyRead.Scan, "a later column alone is no prefix")
  }

  test("bounds on the first key column read that range, inclusive; bounds on other columns read everything") {
    val r = plan(GreaterThan("key.user", "b"), LessThanOrEqual("key.user", "d"))
    assert(r.read == KeyRead.Range(Some(first("b")), Some(first("d"))) && r.used.size == 2)
    assert(plan(LessThan("key.user", "d")).read == KeyRead.Range(None, Some(first("d"))))
    assert(plan(LessThan("key.user", "d")).read.describe == "range on the first key column (no lower and upper bound)")
    assert(plan(GreaterThan("key.day", 4)) == KeyFilters.Plan(KeyRead.Scan, None, Nil))
  }

  test("more key combinations than a read looks up fall back to a range or a scan") {
    val users = (0 to KeyFilters.maxKeys / 100).map(i => f"u$i%04d").toArray[Any]
    val days = (0 until 100).toArray[Any]
    assert(users.length * days.length > KeyFilters.maxKeys)
    assert(plan(In("key.user", users), In("key.day", days)).read == KeyRead.Scan)
    assert(plan(In("key.user", users), In("key.day", days), GreaterThanOrEqual("key.user", "u0050")).read ==
      KeyRead.Range(Some(first("u0050")), None))
  }

  test("partition_id filters choose the partitions to read, together") {
    val p = plan(EqualTo("partition_id", 1), In("partition_id", Array(0, 1, 3)), EqualTo("key.user", "ann"))
    assert(p.partitions.contains(Set(1)) && p.read == KeyRead.Prefix(first("ann"), 1))
    assert(p.used == Seq(EqualTo("key.user", "ann"), EqualTo("partition_id", 1), In("partition_id", Array(0, 1, 3))))
    assert(plan(In("partition_id", Array(0, 2)), In("partition_id", Array(2, 3))).partitions.contains(Set(2)))
  }

  test("filters that cannot narrow a read are left to Spark: nulls, values, other columns, OR") {
    Seq(EqualTo("key.user", null), EqualTo("value.user", "ann"), EqualTo("batch_id", 3L),
      Or(EqualTo("key.user", "a"), EqualTo("key.user", "b")), IsNotNull("key.user"))
      .foreach(f => assert(plan(f) == KeyFilters.Plan(KeyRead.Scan, None, Nil), f))
  }
}
