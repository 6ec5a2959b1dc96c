package txstate.query

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.StateApi.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}
import txstate.engine.WriteStamp
import txstate.spark.{ColumnFamilies, ProviderFixture, RowCodec}
import txstate.store.{BatchClock, LocalDirectory, StoreInstance, StoreOptions}

/**
 * Rows with when they were last written, and the changed-since filter, read by [[PartitionReader]]
 * from a real store (a `StoreInstance` on RocksDB and checkpoint files) whose batches carry known
 * stamps, as the adapter's batches do, and one batch without (rows of unknown age). The expectation
 * is a model of which batch wrote which key last.
 */
final class TimestampedQueryTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = new StructType().add("a", StringType).add("b", IntegerType)
  private val valueSchema = new StructType().add("v", LongType)
  private val keys = for (a <- Seq("x", "y", "z"); b <- 0 until 40) yield (a, b)
  private val sqlOrder = Ordering.Tuple2(Ordering.String, Ordering.Int)
  private val makeKey = new RowMaker(keySchema)
  private val makeValue = new RowMaker(valueSchema)

  /** Batch `b`'s stamp: its id and a time that is not a function of the id alone the reader could guess. */
  private def stampOf(b: Long): WriteStamp = WriteStamp(b, 1700000000000L + b * 997 + (b % 3) * 50)

  /**
   * The store's history: version 1 untimed (every key, unknown age), then batches 3 to 8 each
   * writing a random third of the keys and deleting a few. Returns the model: key -> its last
   * write (value, stamp), deleted keys absent.
   */
  private final case class History(root: Path, lastVersion: Long, rows: Map[(String, Int), (Long, WriteStamp)])

  private def writeHistory(inst: StoreInstance, codec: RowCodec, root: Path): History = {
    def stored(k: (String, Int)) = ColumnFamilies.withPrefix(ColumnFamilies.defaultId, codec.encodeKey(makeKey(k._1, k._2)))
    val random = new Random(258)
    var model = Map.empty[(String, Int), (Long, WriteStamp)]
    def commit(clock: BatchClock, writes: Seq[(String, Int)], deletes: Seq[(String, Int)], value: Long): Long = {
      val batch = inst.begin(clock)
      writes.foreach(k => batch.put(stored(k), codec.encodeValue(makeValue(value + k._2))))
      deletes.foreach(k => batch.delete(stored(k)))
      model ++= writes.map(k => k -> ((value + k._2, clock.stamp)))
      model --= deletes
      batch.commit().version
    }
    var version = commit(BatchClock.untimed, keys, Nil, 0L)
    for (b <- 3L to 8L) {
      val written = keys.filter(_ => random.nextInt(3) == 0)
      val deleted = keys.filterNot(written.contains).filter(_ => random.nextInt(20) == 0)
      version = commit(BatchClock(stampOf(b), None), written, deleted, b * 1000)
    }
    History(root, version, model)
  }

  /** A store of `spec` with the history written; `f` gets the instance, its codec and the model. */
  private def withHistory(spec: KeyStateEncoderSpec)(f: (StoreInstance, RowCodec, History) => Unit): Unit = {
    val root = new Path(newTempPath("checkpoint").toURI)
    val codec = new RowCodec(keySchema, valueSchema, spec, multiValued = false)
    val inst = open(root)
    try f(inst, codec, writeHistory(inst, codec, root))
    finally inst.close()
  }

  private def open(root: Path): StoreInstance =
    StoreInstance.open(LocalDirectory(newTempPath("local"), stable = true, None), root, new Configuration(),
      StoreOptions(), "timestamped query test")

  private def read(inst: StoreInstance, codec: RowCodec, query: ResolvedQuery): RawAnswer =
    inst.readCommittedView(1000)(view => PartitionReader.read(0, query, PositionBound.Unbounded, codec, view, "test"))
      .get.outcome.fold(f => fail(s"$query failed: $f"), identity)

  private def pair(row: UnsafeRow): (String, Int) = (row.getUTF8String(0).toString, row.getInt(1))

  /** Every page of a paged query, following `next` as a client follows continuations: (key, value, stamp) in order. */
  private def allPages(inst: StoreInstance, codec: RowCodec, limit: Int)(query: PageCursor => ResolvedQuery)
      : Seq[((String, Int), Long, WriteStamp)] = {
    var cursor = PageCursor(limit, None, finished = false)
    val rows = Seq.newBuilder[((String, Int), Long, WriteStamp)]
    var more = true
    while (more) {
      val RawAnswer.Page(page, next) = read(inst, codec, query(cursor))
      assert(page.size <= limit)
      assert(next.isEmpty || page.size == limit, "a page that ends early must be the last")
      rows ++= page.map(r => (pair(r.key), r.value.getLong(0), r.written))
      next match {
        case Some(after) => cursor = PageCursor(limit, Some(after), finished = false)
        case None => more = false
      }
    }
    rows.result()
  }

  /**
   * What the model says a read with `filter` returns: key -> (value, stamp). Written out here, not
   * through [[ChangedSince.accepts]], so a wrong filter cannot agree with itself.
   */
  private def expected(h: History, filter: Option[ChangedSince], keep: ((String, Int)) => Boolean = _ => true) =
    h.rows.filter { case (k, (_, w)) =>
      keep(k) && (filter match {
        case None => true
        case Some(ChangedSince.Batch(n)) => w.batchId != -1 && w.batchId >= n
        case Some(ChangedSince.TimeMs(t)) => w.timeMs != -1 && w.timeMs >= t
      })
    }

  private def asMap(rows: Seq[((String, Int), Long, WriteStamp)]) = {
    assert(rows.map(_._1).distinct.size == rows.size, s"a key read twice: ${rows.map(_._1).diff(rows.map(_._1).distinct)}")
    rows.map { case (k, v, w) => k -> ((v, w)) }.toMap
  }

  /** Every filter the tests try: none, each batch, each batch time, and times between and past them. */
  private def filters: Seq[Option[ChangedSince]] =
    None +: ((2L to 9L).map(b => Some(ChangedSince.Batch(b))) ++
      (2L to 9L).flatMap(b => Seq(stampOf(b).timeMs, stampOf(b).timeMs + 1)).map(t => Some(ChangedSince.TimeMs(t))) :+
      Some(ChangedSince.TimeMs(0L)) :+ Some(ChangedSince.Batch(0L)))

  test("every row read carries its last write's batch and time; rows of unknown age carry unknown") {
    withHistory(NoPrefixKeyStateEncoderSpec(keySchema)) { (inst, codec, h) =>
      val rows = asMap(allPages(inst, codec, 7)(ResolvedQuery.Scan(_)))
      assert(rows == h.rows)
      assert(rows.values.exists(_._2 == WriteStamp.unknown) && rows.values.exists(_._2.knownBatch.contains(8L)),
        "the history should leave rows of unknown age and rows of the last batch")
      val looked = keys.take(50)
      val RawAnswer.Values(values, false) = read(inst, codec, ResolvedQuery.Get(looked.map(k => makeKey(k._1, k._2)), single = false))
      assert(looked.zip(values).map { case (k, v) => k -> v.map(r => (r.value.getLong(0), r.written)) }.toMap ==
        looked.map(k => k -> h.rows.get(k)).toMap)
    }
  }

  test("a changed-since scan returns exactly the rows written at or after it, across pages of every size") {
    withHistory(NoPrefixKeyStateEncoderSpec(keySchema)) { (inst, codec, h) =>
      for (filter <- filters; limit <- Seq(1, 3, 16, 1000)) {
        val rows = allPages(inst, codec, limit)(ResolvedQuery.Scan(_, filter))
        assert(asMap(rows) == expected(h, filter), s"scan $filter, limit $limit")
      }
      assert(allPages(inst, codec, 5)(ResolvedQuery.Scan(_, Some(ChangedSince.Batch(9L)))).isEmpty)
    }
  }

  test("changed-since prefix and range reads filter the same way, in key order, on every key encoding") {
    for (spec <- Seq(NoPrefixKeyStateEncoderSpec(keySchema), PrefixKeyScanStateEncoderSpec(keySchema, 1),
        RangeKeyScanStateEncoderSpec(keySchema, Seq(1)))) {
      withHistory(spec) { (inst, codec, h) =>
        val prefix = new RowMaker(new StructType().add("a", StringType))("y")
        val lower = makeKey("x", 30)
        val upper = makeKey("z", 5)
        def inRange(k: (String, Int)) = sqlOrder.gteq(k, ("x", 30)) && sqlOrder.lteq(k, ("z", 5))
        for (filter <- filters; limit <- Seq(2, 9)) {
          val byPrefix = allPages(inst, codec, limit)(ResolvedQuery.Prefix(prefix, 1, _, filter))
          assert(asMap(byPrefix) == expected(h, filter, _._1 == "y"), s"prefix, $filter, limit $limit, $spec")
          for (descending <- Seq(false, true)) {
            val ranged = allPages(inst, codec, limit)(ResolvedQuery.Range(Some(lower), Some(upper), descending, _, filter))
            assert(asMap(ranged) == expected(h, filter, inRange), s"range, $filter, limit $limit, $spec")
            val order = if (descending) sqlOrder.reverse else sqlOrder
            assert(ranged.map(_._1) == ranged.map(_._1).sorted(order), s"range order, $filter, $spec")
          }
        }
      }
    }
  }

  test("a key lookup with changed-since reads an older row as absent (the data source's key reads)") {
    withHistory(NoPrefixKeyStateEncoderSpec(keySchema)) { (inst, codec, h) =>
      for (filter <- filters) {
        val RawAnswer.Values(values, false) =
          read(inst, codec, ResolvedQuery.Get(keys.map(k => makeKey(k._1, k._2)), single = false, filter))
        val found = keys.zip(values).collect { case (k, Some(r)) => k -> ((r.value.getLong(0), r.written)) }.toMap
        assert(found == expected(h, filter), s"lookups, $filter")
      }
    }
  }

  test("a checkpoint copy (changelog replay into another instance) answers the same stamps and filters") {
    withHistory(NoPrefixKeyStateEncoderSpec(keySchema)) { (inst, codec, h) =>
      val copy = open(h.root)
      try {
        copy.load(h.lastVersion, None)
        for (filter <- filters) {
          assert(asMap(allPages(copy, codec, 11)(ResolvedQuery.Scan(_, filter))) == expected(h, filter), s"copy, $filter")
        }
      } finally copy.close()
    }
  }

  test("a changed-since filter takes batch ids and times from 0 up") {
    assert(ChangedSince.Batch(0L).accepts(WriteStamp(0L, 5L)) && !ChangedSince.Batch(0L).accepts(WriteStamp.unknown))
    assert(ChangedSince.TimeMs(0L).accepts(WriteStamp(3L, 0L)) && !ChangedSince.TimeMs(0L).accepts(WriteStamp(3L, -1L)))
    intercept[IllegalArgumentException](ChangedSince.Batch(-1L))
    intercept[IllegalArgumentException](ChangedSince.TimeMs(-5L))
  }
}
