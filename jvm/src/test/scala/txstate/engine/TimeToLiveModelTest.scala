package txstate.engine

import java.io.File

import scala.collection.immutable.TreeMap
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * Model check of stamped rows and state TTL across batches: a sorted map of key -> (value, write
 * stamp) and a fake batch clock, against the engine through every way a batch can end (commit,
 * abort, commit then roll back and re-run, early commits kept or undone, a replay instead of a
 * commit, a replay as a version of storage format 1) and every way an engine can come back
 * (reopening its directory, a rebuild that replays every version into a fresh directory). TTL is
 * switched on and off and its length changed between batches; some batches carry no timestamp.
 * Seed 3024 once found a rollback that left restored rows out of the TTL index.
 *
 * Expiry follows Flink's rule, written here independently of the engine's cutoff arithmetic: a row
 * TTL applies to is gone in a batch at time `now` once `now - lastWrite >= ttl`, where a row of
 * unknown write time counts from the batch time TTL was switched on at.
 *
 * After every step: the transaction's reads (gets, getAll, full and ranged iteration, stamps
 * included) equal the model, `expiredEntries` equals the model's count, committed rows, stamps and
 * `numKeys` equal the model, the TTL index holds an entry for every row TTL applies to (at its
 * write time) and none older than the last cutoff, and `oldestWriteMs` is the model's oldest row.
 */
final class TimeToLiveModelTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._
  import TimeToLiveModelTest._

  private implicit val keyOrdering: Ordering[Key] = Ordering.fromLessThan[Key](lexicographic(_, _) < 0)

  private val alphabet = Vector(0x00, 0x01, 0x7f, 0x80, 0xff)
  private val keySpace: Vector[Key] = alphabet.map(Vector(_)) ++ (for (a <- alphabet; c <- alphabet) yield Vector(a, c))

  private def toBytes(k: Key): Array[Byte] = k.map(_.toByte).toArray
  private def toKey(bytes: Array[Byte]): Key = bytes.toVector.map(_ & 0xff)

  /**
   * One model run. With `plainRows`, the store starts as version 1 of storage format 1 (0.1.0's
   * plain rows, replayed from a changelog of that format as a rebuild would), so TTL, rollback and
   * replay also meet rows of unknown age that live in the `data` family until rewritten.
   */
  private final class Run(seed: Long, options: EngineOptions, newDir: () => File, plainRows: Int = 0,
      cache: HotStateCache = HotStateCache.off) {
    private val rnd = new Random(seed)
    private var dir = newDir()
    private var engine = TxEngine.open(dir, options, cache)

    // The committed state as the model sees it, and every version's changes and commit point from version 0.
    private var committed: Model = TreeMap.empty
    private var since: Option[Long] = None // the batch time TTL was switched on at, while it is on
    private var versions = Vector.empty[(Vector[ChangeRecord], CommitPoint)]
    private var undoable: Option[Before] = None
    private var plain = Set.empty[Key] // committed keys still in the `data` family (storage format 1), never rewritten

    // The open batch.
    private var clock = Clock(0, 1000000L, timed = true, ttlMs = None)
    private var tx: Transaction = _
    private var working: Model = TreeMap.empty
    private var buffered = Set.empty[Key] // written by this batch and not early-committed: read back unstamped
    private var workingPlain = Set.empty[Key]
    private var segments = Vector.empty[ChangeRecord]
    private var earlyCommits = 0 // an early commit of an empty buffer adds no records, but is one
    // The newest version the committed view has shown: it never goes back (a rollback leaves it showing).
    private var shown: (CommitPoint, Model) = (CommitPoint.empty, TreeMap.empty)

    private var batches = 0
    private var step = 0
    private val stats = scala.collection.mutable.Map.empty[String, Int].withDefaultValue(0)
    private def clue = s"seed $seed, batch $batches, step $step, version ${engine.committed.version}, $clock, since $since"

    if (plainRows > 0) startFromFormatOne()

    def run(batchCount: Int): Map[String, Int] = {
      try while (batches < batchCount) {
        runBatch()
        batches += 1
      } finally retire(engine)
      stats.toMap
    }

    /** Closes an engine the run is done with, counting what its hot-state cache did. */
    private def retire(e: TxEngine): Unit = {
      val c = e.cacheStats
      stats("cache hits") += c.hits.toInt
      stats("cache misses") += c.misses.toInt
      stats("cache evictions") += c.evictions.toInt
      e.close()
    }

    private def startFromFormatOne(): Unit = {
      val rows = rnd.shuffle(keySpace).take(plainRows).map(k => k -> Row(randomValue(), WriteStamp.unknown))
      val changes = rows.map { case (k, r) => ChangeRecord.Put(toBytes(k), r.value.toArray): ChangeRecord }
      val point = CommitPoint(1, Some("id-1"), 1, 1001L, rows.size, writtenBy = CommitPoint.firstRelease)
      engine.replay(changes.iterator, point)
      committed = TreeMap(rows: _*)
      plain = committed.keySet
      versions = Vector(changes -> point)
      shown = (point, committed)
      clock = clock.copy(batchId = 1)
      checkCommitted(engine)
    }

    // ---- one batch --------------------------------------------------------------------------

    private def runBatch(): Unit = {
      begin()
      (0 until rnd.nextInt(24)).foreach { _ =>
        rnd.nextInt(100) match {
          case n if n < 32 => put()
          case n if n < 44 => delete()
          case n if n < 49 => deleteRange()
          case n if n < 61 => checkGet()
          case n if n < 65 => checkGetAll()
          case n if n < 72 => checkFullIteration()
          case n if n < 78 => checkRangeIteration()
          case n if n < 82 => removeWhileIterating()
          case n if n < 85 => earlyCommit()
          case _ => ()
        }
        assert(tx.numKeys == working.size, clue)
        step += 1
      }
      rnd.nextInt(100) match {
        case n if n < 50 => commit(); clock = nextClock(clock)
        case n if n < 59 => replayInsteadOfCommit(); clock = nextClock(clock)
        case n if n < 65 => replayAsFormatOne(); clock = nextClock(clock)
        case n if n < 77 => abort(); clock = rerunAfterAbort(clock)
        case n if n < 85 =>
          abort()
          // Spark re-runs the previous batch (its commit never reached the commit log), half the
          // time with the TTL setting the aborted batch had (the setting is the run's, not the batch's).
          val aborted = clock
          clock = rollBack().map { rerun =>
            if (rnd.nextBoolean()) rerun else rerun.copy(ttlMs = aborted.ttlMs, timed = rerun.timed || aborted.ttlMs.isDefined)
          }.getOrElse(rerunAfterAbort(clock))
        case _ =>
          commit()
          clock = rollBack().getOrElse(nextClock(clock))
      }
      rnd.nextInt(100) match {
        case n if n < 4 => reopen()
        case n if n < 7 => rebuild()
        case _ => ()
      }
    }

    /** Begins the batch of `clock`: the model expires what TTL says, and the transaction must agree. */
    private def begin(): Unit = {
      tx = engine.begin(clock.stamp, clock.ttl)
      val expired = expiredAt(clock, committed)
      working = committed -- expired
      workingPlain = plain -- expired
      buffered = Set.empty
      segments = Vector.empty
      earlyCommits = 0
      assert(tx.timeIndexSinceMs == clock.ttlMs.map(_ => since.getOrElse(clock.timeMs)), clue)
      assert(tx.expiredEntries == expired.size, s"$clue: expired ${expired.toSeq.sorted}")
      assert(tx.numKeys == working.size, clue)
      expired.foreach(k => assert(tx.get(toBytes(k)).isEmpty, s"$clue: expired key $k still visible"))
      checkFullIteration()
      stats("expired") += expired.size
      if (clock.ttlMs.isDefined) stats("ttl batches") += 1
    }

    /** The keys a batch of `c` expires on `rows`: Flink's rule, ages counted from `since` when unknown. */
    private def expiredAt(c: Clock, rows: Model): Set[Key] = c.ttlMs.fold(Set.empty[Key]) { ttl =>
      val countFrom = since.getOrElse(c.timeMs)
      rows.collect { case (k, r) if applies(k) && c.timeMs - r.stamp.knownTimeMs.getOrElse(countFrom) >= ttl => k }.toSet
    }

    // ---- clocks -----------------------------------------------------------------------------

    /** The next batch: the clock moves on (sometimes not at all), and TTL may be switched or changed. */
    private def nextClock(c: Clock): Clock = {
      val gap = rnd.nextInt(10) match {
        case n if n < 2 => 0L
        case n if n < 6 => 1L + rnd.nextInt(5)
        case n if n < 9 => 5L + rnd.nextInt(30)
        case _ => 50L + rnd.nextInt(150)
      }
      val ttlMs = nextTtl(c.ttlMs)
      Clock(c.batchId + 1, c.timeMs + gap, timed = ttlMs.isDefined || rnd.nextInt(5) > 0, ttlMs)
    }

    private def nextTtl(current: Option[Long]): Option[Long] = rnd.nextInt(100) match {
      // Short TTLs expire rows within a few batches; long ones keep rows from before a switch-on
      // alive until a later rebuild or rollback meets them.
      case n if n < 12 => if (current.isDefined) None else Some(Seq(3L, 10L, 25L, 60L, 300L, 1000L)(rnd.nextInt(6)))
      case n if n < 18 => current.map(_ => Seq(1L, 3L, 10L, 25L, 60L, 300L)(rnd.nextInt(6)))
      case _ => current
    }

    /** After an abort Spark runs the same batch again (same id and time), now and then with a new TTL setting (a restart). */
    private def rerunAfterAbort(c: Clock): Clock =
      if (rnd.nextInt(4) > 0) c
      else {
        val ttlMs = nextTtl(c.ttlMs)
        c.copy(ttlMs = ttlMs, timed = c.timed || ttlMs.isDefined)
      }

    // ---- writes and reads -------------------------------------------------------------------

    private def randomKey(): Key = keySpace(rnd.nextInt(keySpace.size))
    private def randomValue(): Vector[Byte] = Vector.fill(rnd.nextInt(5))(rnd.nextInt(256).toByte)

    private def put(): Unit = {
      val (k, v) = (randomKey(), randomValue())
      tx.put(toBytes(k), v.toArray)
      working += k -> Row(v, clock.stamp)
      workingPlain -= k
      buffered += k
    }

    private def delete(): Unit = {
      val k = randomKey()
      tx.delete(toBytes(k))
      working -= k
      workingPlain -= k
    }

    private def deleteRange(): Unit = {
      val (from, until) = (randomKey(), randomKey())
      tx.deleteRange(toBytes(from), toBytes(until))
      if (keyOrdering.lt(from, until)) {
        workingPlain --= working.range(from, until).keys
        working --= working.range(from, until).keys
      }
    }

    /** What a transaction's reads must show: its own unflushed writes unstamped, the rest with their stamps. */
    private def expectedRows(rows: Iterable[(Key, Row)]): Vector[(Key, Vector[Byte], WriteStamp)] =
      rows.map { case (k, r) => (k, r.value, if (buffered(k)) WriteStamp.unknown else r.stamp) }.toVector

    private def read(it: KeyValueIterator): Vector[(Key, Vector[Byte], WriteStamp)] =
      try it.map(kv => (toKey(kv.key), kv.value.toVector, kv.written)).toVector finally it.close()

    private def checkGet(): Unit = {
      val k = randomKey()
      assert(tx.get(toBytes(k)).map(_.toVector) == working.get(k).map(_.value), s"$clue: get $k")
    }

    private def checkGetAll(): Unit = {
      val keys = Vector.fill(1 + rnd.nextInt(6))(randomKey())
      assert(tx.getAll(keys.map(toBytes)).map(_.map(_.toVector)) == keys.map(k => working.get(k).map(_.value)), s"$clue: getAll")
    }

    private def checkFullIteration(): Unit =
      assert(read(tx.iterator(KeyRange.all)) == expectedRows(working), s"$clue: full iteration")

    private def checkRangeIteration(): Unit = {
      val (a, c) = (randomKey(), randomKey())
      val (from, until) = if (keyOrdering.lteq(a, c)) (a, c) else (c, a)
      assert(read(tx.iterator(KeyRange(toBytes(from), Some(toBytes(until))))) == expectedRows(working.range(from, until)),
        s"$clue: range [$from, $until)")
    }

    /** Spark evicts while it iterates: delete or rewrite rows just returned (deduplication's watermark eviction). */
    private def removeWhileIterating(): Unit = {
      val expected = expectedRows(working)
      val it = tx.iterator(KeyRange.all)
      val seen = Vector.newBuilder[(Key, Vector[Byte], WriteStamp)]
      try it.foreach { kv =>
        val k = toKey(kv.key)
        seen += ((k, kv.value.toVector, kv.written))
        rnd.nextInt(3) match {
          case 0 => tx.delete(kv.key); working -= k; workingPlain -= k
          case 1 =>
            val v = randomValue()
            tx.put(kv.key, v.toArray)
            working += k -> Row(v, clock.stamp)
            workingPlain -= k
            buffered += k
          case _ => ()
        }
      } finally it.close()
      assert(seen.result() == expected, s"$clue: rows seen while removing")
    }

    /** A sub-batch into RocksDB (the store writes its segment first: here, its change records). */
    private def earlyCommit(): Unit = {
      segments ++= tx.changes
      engine.earlyCommit(tx)
      earlyCommits += 1
      buffered = Set.empty
      undoable = None // the database moved on from the last commit: it can no longer be undone
      assert(engine.committedBeforeLastCommit.isEmpty, clue)
      assert(engine.inFlight.contains(engine.committed.version + 1), clue)
      stats("early commits") += 1
    }

    // ---- how a batch ends -------------------------------------------------------------------

    private def commit(): Unit = {
      val changes = segments ++ tx.changes
      val point = pointOf(tx)
      val dropsIndex = since.isDefined && clock.ttlMs.isEmpty
      val before = Before(committed, plain, since, versions.size, clock)
      engine.commit(tx, point)
      // A version with early commits, or one that dropped the TTL index, is not kept for rollback.
      undoable = if (earlyCommits > 0 || dropsIndex) None else Some(before)
      afterNewVersion(changes, point, newSince = clock.ttlMs.map(_ => since.getOrElse(clock.timeMs)))
      assert(point.stamp == clock.stamp, clue)
      assert(engine.committedBeforeLastCommit.isDefined == undoable.isDefined, s"$clue: can the commit be undone")
      clock.ttlMs.foreach(ttl => assertNoIndexEntryBefore(clock.timeMs - ttl + 1))
      if (dropsIndex) assert(indexEntries().isEmpty, s"$clue: switching TTL off drops the index")
      stats("commits") += 1
    }

    /** The change records, replayed the way a rebuild would, give what committing them gives. */
    private def replayInsteadOfCommit(): Unit = if (earlyCommits > 0) commit() else {
      val changes = tx.changes.toVector
      val point = pointOf(tx)
      tx.discard()
      engine.replay(changes.iterator, point)
      undoable = None
      afterNewVersion(changes, point, newSince = clock.ttlMs.map(_ => since.getOrElse(clock.timeMs)))
      assert(engine.committedBeforeLastCommit.isEmpty, clue)
      stats("replays") += 1
    }

    /**
     * The batch's changes replayed as a version of storage format 1 (a changelog a format 1 writer
     * made: plain rows, no stamps, no TTL): the rows it writes go back to `data`, unstamped, and a
     * TTL index goes.
     */
    private def replayAsFormatOne(): Unit = if (earlyCommits > 0) commit() else {
      val changes = tx.changes.toVector
      val version = tx.base.version + 1
      val point = CommitPoint(version, Some(s"id-$version"), 1, 1000L + version, tx.numKeys, writtenBy = CommitPoint.firstRelease)
      tx.discard()
      engine.replay(changes.iterator, point)
      undoable = None
      working = working.map { case (k, r) => k -> (if (buffered(k)) Row(r.value, WriteStamp.unknown) else r) }
      workingPlain ++= buffered.filter(working.contains)
      val dropsIndex = since.isDefined
      afterNewVersion(changes, point, newSince = None)
      if (dropsIndex) assert(indexEntries().isEmpty, s"$clue: a version without TTL drops the index")
      stats("format 1 versions") += 1
    }

    private def afterNewVersion(changes: Vector[ChangeRecord], point: CommitPoint, newSince: Option[Long]): Unit = {
      committed = working
      plain = workingPlain
      since = newSince
      versions :+= (changes -> point)
      if (point.version >= shown._1.version) shown = (point, committed)
      assert(engine.committed == point && engine.inFlight.isEmpty, clue)
      assert(point.timeIndexSinceMs == since, clue)
      checkCommitted(engine)
    }

    private def abort(): Unit = {
      if (earlyCommits > 0) engine.undoEarlyCommits(segments.iterator)
      tx.discard()
      assert(engine.inFlight.isEmpty, clue)
      checkCommitted(engine)
      stats("aborts") += 1
    }

    /** Rolls back the last commit if the engine can; returns the batch to re-run. */
    private def rollBack(): Option[Clock] = undoable.map { before =>
      val previous = versions.take(before.versions).lastOption.fold(CommitPoint.empty)(_._2)
      assert(engine.committedBeforeLastCommit.contains(previous), clue)
      if ((before.plain -- plain).nonEmpty) stats("rollbacks restoring plain rows") += 1
      val restored = engine.rollbackLastCommit()
      committed = before.rows
      plain = before.plain
      since = before.since
      versions = versions.take(before.versions)
      undoable = None
      assert(restored == engine.committed && restored.version == versions.size, clue)
      assert(restored.timeIndexSinceMs == since, clue)
      checkCommitted(engine)
      stats("rollbacks") += 1
      before.rerun
    }

    // ---- engines coming back ----------------------------------------------------------------

    private def reopen(): Unit = {
      retire(engine)
      engine = TxEngine.open(dir, options, cache)
      undoable = None
      shown = (engine.committed, committed)
      assert(engine.committed == versions.lastOption.fold(CommitPoint.empty)(_._2), clue)
      assert(engine.committedBeforeLastCommit.isEmpty, s"$clue: the undo does not outlive the engine")
      checkCommitted(engine)
      stats("reopens") += 1
    }

    /**
     * Replays every version into a fresh directory (a rebuild from changelogs), checks it holds the
     * same rows and stamps, and that the next batch expires exactly the same keys on both engines;
     * then carries on with the rebuilt one.
     */
    private def rebuild(): Unit = {
      val rebuiltDir = newDir()
      val rebuilt = TxEngine.open(rebuiltDir, options, cache)
      try {
        versions.foreach { case (changes, point) => rebuilt.replay(changes.iterator, point) }
        assert(rebuilt.committed == engine.committed, clue)
        checkCommitted(rebuilt)
        val original = visibleAtBegin(engine)
        val replayed = visibleAtBegin(rebuilt)
        assert(replayed == original, s"$clue: the rebuilt engine's next batch sees other rows than the original's")
        assert(replayed._1 == expiredAt(clock, committed).size, clue)
      } catch {
        case e: Throwable =>
          rebuilt.close()
          throw e
      }
      retire(engine)
      engine = rebuilt
      dir = rebuiltDir
      undoable = None
      shown = (engine.committed, committed)
      stats("rebuilds") += 1
    }

    /** The next batch's expiry count and rows, begun and discarded. */
    private def visibleAtBegin(e: TxEngine): (Long, Vector[(Key, Vector[Byte], WriteStamp)]) = {
      val t = e.begin(clock.stamp, clock.ttl)
      try ((t.expiredEntries, read(t.iterator(KeyRange.all)))) finally t.discard()
    }

    // ---- the committed state ----------------------------------------------------------------

    private def checkCommitted(e: TxEngine): Unit = {
      val expected = committed.toVector.map { case (k, r) => (k, r.value, r.stamp) }
      assert(read(e.committedRange(KeyRange.all)) == expected, s"$clue: committed rows and stamps")
      assert(e.committed.numKeys == committed.size, s"$clue: exact numKeys")
      // The committed view: the newest version shown (a fresh engine, as a rebuild makes, shows its own).
      val (shownPoint, shownRows) = if (e eq engine) shown else (e.committed, committed)
      val probe = randomKey()
      val viewed = e.readCommittedView(1000) { view =>
        (view.point, read(view.range(KeyRange.all)), view.row(toBytes(probe)).map(kv => (kv.value.toVector, kv.written)))
      }.get
      assert(viewed._1 == shownPoint, s"$clue: the committed view's version")
      assert(viewed._2 == shownRows.toVector.map { case (k, r) => (k, r.value, r.stamp) }, s"$clue: committed view")
      assert(viewed._3 == shownRows.get(probe).map(r => (r.value, r.stamp)), s"$clue: view.row($probe)")
      // While TTL is on, every row it applies to has an index entry at its write time (stale entries may be there too).
      since.foreach { from =>
        val entries = indexEntries(e)
        committed.foreach { case (k, r) =>
          if (applies(k)) {
            val at = r.stamp.knownTimeMs.getOrElse(from)
            assert(entries((at, k)), s"$clue: the TTL index lacks ($at, $k)")
          }
        }
      }
      val oldest = since.flatMap(from => committed.collect { case (k, r) if applies(k) => r.stamp.knownTimeMs.getOrElse(from) }.reduceOption(_ min _))
      assert(e.oldestWriteMs(key => (key(0) & 0xff) != 0xff) == oldest, s"$clue: oldestWriteMs")
    }

    private def indexEntries(e: TxEngine = engine): Set[(Long, Key)] = {
      val it = e.timeIndexBefore(Long.MaxValue)
      try it.map(entry => (TimeIndex.timeOf(entry.key), toKey(TimeIndex.rowKeyOf(entry.key)))).toSet finally it.close()
    }

    /** A TTL commit deletes the index entries before its cutoff: the index does not grow with stale entries. */
    private def assertNoIndexEntryBefore(cutoffMs: Long): Unit = {
      val old = indexEntries().filter(_._1 < cutoffMs)
      assert(old.isEmpty, s"$clue: index entries before the cutoff $cutoffMs: ${old.toSeq.sorted.take(5)}")
    }
  }

  for (seed <- Seq(1L, 258L, 3024L, 20240601L)) {
    test(s"stamped rows and TTL expiry follow the model across commits, aborts, rollbacks, early commits, reopens and rebuilds (seed $seed)") {
      val seen = new Run(seed, EngineOptions(), () => newTempPath("db")).run(batchCount = 400)
      info(s"exercised: ${seen.toSeq.sorted.map { case (what, n) => s"$n $what" }.mkString(", ")}")
      // The run must have exercised what it claims to check.
      Seq("expired", "ttl batches", "commits", "replays", "format 1 versions", "aborts", "rollbacks", "early commits",
        "reopens", "rebuilds")
        .foreach(what => assert(seen.getOrElse(what, 0) > 0, s"no $what in $seen"))
    }
  }

  for (seed <- Seq(14L, 258258L)) {
    test(s"the model holds on a store that started in storage format 1, its rows upgraded as batches write them (seed $seed)") {
      val seen = new Run(seed, EngineOptions(), () => newTempPath("db"), plainRows = 20).run(batchCount = 300)
      info(s"exercised: ${seen.toSeq.sorted.map { case (what, n) => s"$n $what" }.mkString(", ")}")
      assert(seen.getOrElse("rollbacks restoring plain rows", 0) > 0, s"no rollback met a plain row in $seen")
    }
  }

  test("the model run also holds when replays are written in many small chunks") {
    new Run(99L, EngineOptions(replayChunkBytes = 16), () => newTempPath("db")).run(batchCount = 300)
  }

  // The hot-state cache must not change a single answer. A cache larger than the key space keeps
  // every entry until the engine forgets it (a missed invalidation shows as a stale read); a tiny
  // one evicts all the time, so reads also cross between cached and uncached keys.
  for ((seed, cacheBytes, what) <- Seq((1L, 1L << 20, "large"), (3024L, 1L << 20, "large"), (258L, 1024L, "tiny"),
      (20240601L, 1024L, "tiny"))) {
    test(s"the model holds with a $what hot-state cache in front of RocksDB (seed $seed)") {
      val seen = new Run(seed, EngineOptions(), () => newTempPath("db"), plainRows = if (seed % 2 == 0) 20 else 0,
        cache = new HotStateCache(cacheBytes, shardCount = 2)).run(batchCount = 400)
      info(s"exercised: ${seen.toSeq.sorted.map { case (what, n) => s"$n $what" }.mkString(", ")}")
      Seq("cache hits", "cache misses", "expired", "commits", "replays", "aborts", "rollbacks", "early commits",
        "reopens", "rebuilds").foreach(what => assert(seen.getOrElse(what, 0) > 0, s"no $what in $seen"))
      if (cacheBytes < 4096) assert(seen.getOrElse("cache evictions", 0) > 0, s"no cache evictions in $seen")
    }
  }
}

private object TimeToLiveModelTest {
  type Key = Vector[Int] // unsigned byte values, ordered like RocksDB's bytewise comparator
  final case class Row(value: Vector[Byte], stamp: WriteStamp)
  type Model = TreeMap[Key, Row]

  // Rows under 0xff never expire: TTL does not apply to them (as the adapter keeps its registry out of TTL).
  def applies(k: Key): Boolean = k.head != 0xff
  def rule(ttlMs: Long): TimeToLive = TimeToLive(ttlMs, key => (key(0) & 0xff) != 0xff)

  /** One batch's clock and TTL setting, as Spark's offset log and the session's conf give them. */
  final case class Clock(batchId: Long, timeMs: Long, timed: Boolean, ttlMs: Option[Long]) {
    def stamp: WriteStamp = if (timed) WriteStamp(batchId, timeMs) else WriteStamp.unknown
    def ttl: Option[TimeToLive] = ttlMs.map(rule)
  }

  /** What the engine can go back to with `rollbackLastCommit`, and the batch to re-run then. */
  final case class Before(rows: Model, plain: Set[Key], since: Option[Long], versions: Int, rerun: Clock)
}
