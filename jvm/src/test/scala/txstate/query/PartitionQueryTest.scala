package txstate.query

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.StateApi.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}
import txstate.spark.{ProviderFixture, StoreSchemaFile, TxStateStoreProvider}

/** Query answers of one partition, read from a real provider's committed view. */
final class PartitionQueryTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = new StructType().add("a", StringType).add("b", IntegerType)
  private val valueSchema = new StructType().add("v", LongType)
  private val keys = for (a <- Seq("x", "y", "z"); b <- -20 until 130) yield (a, b)
  private def valueOf(a: String, b: Int): Long = a.head.toLong * 1000 + b

  /** A provider holding `keys` at version 1 (and version 2 when `twice`), encoded with `spec`. */
  private def loaded(spec: KeyStateEncoderSpec)(f: TxStateStoreProvider => Unit): Unit = {
    val key = new RowMaker(keySchema)
    val value = new RowMaker(valueSchema)
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema, spec)) { provider =>
      val store = provider.getStore(0)
      keys.foreach { case (a, b) => store.put(key(a, b), value(valueOf(a, b))) }
      store.commit()
      f(provider)
    }
  }

  private def read(provider: TxStateStoreProvider, query: ResolvedQuery, bound: PositionBound = PositionBound.Unbounded)
      : RawPartitionResult =
    provider.readCommittedView(1000)((codec, view) => PartitionReader.read(0, query, bound, codec, view, "test")).get

  /** A key as the py4j gateway builds it: JSON (docs/query-protocol.md) straight into the store's row format. */
  private def keyRow(json: String, schema: StructType, what: String): UnsafeRow =
    QueryResolver.toUnsafe(InternalJson.readRow(new ObjectMapper().readTree(json), schema, what), schema, what)

  private def pair(row: UnsafeRow): (String, Int) = (row.getUTF8String(0).toString, row.getInt(1))

  /** Every page of a paged query, following `next` like a client following continuations. */
  private def allPages(provider: TxStateStoreProvider, limit: Int)(query: PageCursor => ResolvedQuery)
      : Seq[Seq[((String, Int), Long)]] = {
    var cursor = PageCursor(limit, None, finished = false)
    val pages = Seq.newBuilder[Seq[((String, Int), Long)]]
    var more = true
    while (more) {
      val RawAnswer.Page(rows, next) = read(provider, query(cursor)).outcome.toOption.get
      assert(rows.size <= limit)
      pages += rows.map(r => pair(r.key) -> r.value.getLong(0))
      next match {
        case Some(after) => cursor = PageCursor(limit, Some(after), finished = false)
        case None => more = false
      }
    }
    pages.result()
  }

  private val sqlOrder = Ordering.Tuple2(Ordering.String, Ordering.Int)

  test("a scan pages through every row exactly once") {
    loaded(NoPrefixKeyStateEncoderSpec(keySchema)) { provider =>
      val pages = allPages(provider, 37)(ResolvedQuery.Scan(_))
      assert(pages.init.forall(_.size == 37))
      val rows = pages.flatten
      assert(rows.map(_._1).sorted(sqlOrder) == keys.sorted(sqlOrder))
      assert(rows.forall { case ((a, b), v) => v == valueOf(a, b) })
    }
  }

  test("range queries follow SQL ordering with inclusive bounds, both directions, across pages") {
    loaded(NoPrefixKeyStateEncoderSpec(keySchema)) { provider =>
      val lower = keyRow("""["x", 10]""", keySchema, "lower")
      val upper = keyRow("""["y", -5]""", keySchema, "upper")
      val expected = keys.filter(k => sqlOrder.gteq(k, ("x", 10)) && sqlOrder.lteq(k, ("y", -5))).sorted(sqlOrder)
      val ascending = allPages(provider, 9)(c => ResolvedQuery.Range(Some(lower), Some(upper), descending = false, c))
      assert(ascending.flatten.map(_._1) == expected)
      val descending = allPages(provider, 9)(c => ResolvedQuery.Range(Some(lower), Some(upper), descending = true, c))
      assert(descending.flatten.map(_._1) == expected.reverse)
      val open = allPages(provider, 1000)(c => ResolvedQuery.Range(None, Some(upper), descending = false, c))
      assert(open.flatten.map(_._1) == keys.filter(k => sqlOrder.lteq(k, ("y", -5))).sorted(sqlOrder))
    }
  }

  test("prefix queries give the same rows whether or not the store is prefix-encoded") {
    val prefix = keyRow("""["y"]""", new StructType().add("a", StringType), "prefix")
    val expected = keys.filter(_._1 == "y").sorted(sqlOrder)
    for (spec <- Seq(NoPrefixKeyStateEncoderSpec(keySchema), PrefixKeyScanStateEncoderSpec(keySchema, 1))) {
      loaded(spec) { provider =>
        val pages = allPages(provider, 11)(ResolvedQuery.Prefix(prefix, 1, _))
        assert(pages.flatten.map(_._1).sorted(sqlOrder) == expected, s"with $spec")
      }
    }
  }

  test("key lookups, a bound above the committed batch, and an unknown query type") {
    loaded(RangeKeyScanStateEncoderSpec(keySchema, Seq(1))) { provider =>
      val present = keyRow("""["z", -3]""", keySchema, "key")
      val absent = keyRow("""["w", 1]""", keySchema, "key")
      val got = read(provider, ResolvedQuery.Get(Seq(present, absent), single = false))
      assert(got.point.map(_.version).contains(1L))
      val RawAnswer.Values(values, false) = got.outcome.toOption.get
      assert(values.map(_.map(_.value.getLong(0))) == Seq(Some(valueOf("z", -3)), None))

      val behind = read(provider, ResolvedQuery.Get(Seq(present), single = true), PositionBound.AtLeastBatch(1))
      assert(behind.outcome.left.toOption.map(_.reason).contains(FailureReason.NotUpToBound))
      assert(read(provider, ResolvedQuery.Get(Seq(present), single = true), PositionBound.AtLeastBatch(0)).outcome.isRight)
      val unknown = read(provider, ResolvedQuery.Unknown("window"))
      assert(unknown.outcome.left.toOption.map(_.reason).contains(FailureReason.UnknownQueryType))
    }
  }

  test("a store whose first batch is still running answers behind (no batch committed yet), not an empty partition") {
    // A read planned while batch 0 runs finds the live store at version 0; the data source's waitMs
    // and a client's retry wait for the first commit on NOT_UP_TO_BOUND, where an empty answer
    // would be taken as a partition with no keys.
    val key = new RowMaker(keySchema)
    val value = new RowMaker(valueSchema)
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema, NoPrefixKeyStateEncoderSpec(keySchema))) { provider =>
      val store = provider.getStore(0)
      keys.foreach { case (a, b) => store.put(key(a, b), value(valueOf(a, b))) }
      val running = read(provider, ResolvedQuery.Scan(PageCursor(1000, None, finished = false)))
      val failure = running.outcome.left.toOption
      assert(failure.map(_.reason).contains(FailureReason.NotUpToBound), running.outcome)
      assert(failure.exists(_.message.startsWith("partition 0: no batch committed yet")), failure)
      store.commit()
      val RawAnswer.Page(rows, None) = read(provider, ResolvedQuery.Scan(PageCursor(1000, None, finished = false))).outcome.toOption.get
      assert(rows.size == keys.size)
    }
  }

  test("malformed keys are the caller's error, naming the schema") {
    val tooShort = intercept[IllegalArgumentException](keyRow("""["x"]""", keySchema, "key"))
    assert(tooShort.getMessage.contains("TXSTATE_QUERY_BAD_KEY") && tooShort.getMessage.contains("a:string"))
    val wrongType = intercept[IllegalArgumentException](keyRow("""["x", "one"]""", keySchema, "key"))
    assert(wrongType.getMessage.contains("TXSTATE_QUERY_BAD_KEY"))
  }

  test("providers write a schema file that reads back to the same encoding") {
    for (spec <- Seq(NoPrefixKeyStateEncoderSpec(keySchema), PrefixKeyScanStateEncoderSpec(keySchema, 1),
        RangeKeyScanStateEncoderSpec(keySchema, Seq(1)))) {
      val root = newCheckpointRoot()
      withProvider(newProvider(root, keySchema, valueSchema, spec)) { provider =>
        provider.getStore(0).abort()
        val schema = StoreSchemaFile.load(root, 0L, StateStoreId.DEFAULT_STORE_NAME, new Configuration()).get
        assert(schema.keySchema == keySchema && schema.valueSchema == valueSchema && schema.spec == spec)
        assert(!schema.multiValued)
      }
    }
  }

  test("continuation tokens round trip and refuse another query type") {
    val token = ContinuationToken("range", Map(0 -> Array[Byte](1, 2, 3), 7 -> Array[Byte](-1)))
    val back = ContinuationToken.decode(token.encode, "range")
    assert(back.after.keySet == Set(0, 7) && back.after(7).toSeq == Seq(-1.toByte))
    assert(back.cursor(7, 10) == back.cursor(7, 10) && back.cursor(3, 10).finished)
    val e = intercept[IllegalArgumentException](ContinuationToken.decode(token.encode, "scan"))
    assert(e.getMessage.contains("TXSTATE_QUERY_BAD_CONTINUATION") && e.getMessage.contains("range"))
    intercept[IllegalArgumentException](ContinuationToken.decode("not a token", "scan"))
  }
}
