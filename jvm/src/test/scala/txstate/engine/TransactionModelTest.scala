package txstate.engine

import scala.collection.immutable.TreeMap
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * Property-style check of read-your-writes: thousands of random operations over a small key space
 * (bytes chosen to exercise unsigned order: 0x00, 0x7f, 0x80, 0xff), compared after every step with
 * a sorted-map model. Commits, replays, aborts and rollbacks happen at random; after every commit the
 * engine's exact key count and its committed rows must equal the model.
 */
final class TransactionModelTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private type Key = Vector[Int] // unsigned byte values, ordered like RocksDB's bytewise comparator
  private type Model = TreeMap[Key, Vector[Byte]]
  private implicit val keyOrdering: Ordering[Key] = Ordering.fromLessThan[Key](lexicographic(_, _) < 0)

  private val alphabet = Vector(0x00, 0x01, 0x7f, 0x80, 0xff)
  private val keySpace: Vector[Key] = alphabet.map(Vector(_)) ++ (for (a <- alphabet; c <- alphabet) yield Vector(a, c))

  private def toBytes(k: Key): Array[Byte] = k.map(_.toByte).toArray
  private def toKey(bytes: Array[Byte]): Key = bytes.toVector.map(_ & 0xff)

  private def rows(it: KeyValueIterator): Vector[(Key, Vector[Byte])] =
    try it.map(kv => (toKey(kv.key), kv.value.toVector)).toVector finally it.close()

  private def inRange(model: Model, from: Key, until: Option[Key]): Vector[(Key, Vector[Byte])] =
    until.fold(model.iteratorFrom(from).toVector)(u => model.range(from, u).toVector)

  private final class Run(seed: Long, engine: TxEngine) {
    private val rnd = new Random(seed)
    private var committed: Model = TreeMap.empty
    private var beforeLastCommit: Option[Model] = None // set only when the engine can roll back
    private var working: Model = TreeMap.empty
    private var tx: Transaction = engine.begin()
    private var step = 0
    private def clue = s"seed $seed, step $step, version ${engine.committed.version}"

    private def randomKey(): Key = keySpace(rnd.nextInt(keySpace.size))
    private def randomValue(): Vector[Byte] = Vector.fill(rnd.nextInt(6))(rnd.nextInt(256).toByte)
    private def randomBounds(): (Key, Option[Key]) = {
      val a = if (rnd.nextInt(8) == 0) Vector.empty[Int] else randomKey()
      val until = if (rnd.nextInt(4) == 0) None else {
        val c = randomKey()
        Some(if (keyOrdering.lt(c, a)) a else c) // inverted ranges are checked in TransactionTest
      }
      (a, until)
    }

    def run(steps: Int): Unit = {
      while (step < steps) {
        rnd.nextInt(100) match {
          case n if n < 34 => put()
          case n if n < 48 => delete()
          case n if n < 53 => deleteRange()
          case n if n < 63 => checkGet()
          case n if n < 68 => checkFullIteration()
          case n if n < 74 => checkRangeIteration()
          case n if n < 78 => removeWhileIterating()
          case n if n < 87 => commit()
          case n if n < 91 => replayInsteadOfCommit()
          case n if n < 96 => abort()
          case _ => rollback()
        }
        assert(tx.numKeys == working.size, clue)
        step += 1
      }
      tx.discard()
    }

    private def put(): Unit = {
      val (k, v) = (randomKey(), randomValue())
      tx.put(toBytes(k), v.toArray)
      working += k -> v
    }

    private def delete(): Unit = {
      val k = randomKey()
      tx.delete(toBytes(k))
      working -= k
    }

    private def deleteRange(): Unit = {
      val from = randomKey()
      val until = randomKey()
      tx.deleteRange(toBytes(from), toBytes(until))
      if (keyOrdering.lt(from, until)) working --= working.range(from, until).keys
    }

    private def checkGet(): Unit = {
      val k = randomKey()
      assert(tx.get(toBytes(k)).map(_.toVector) == working.get(k), clue)
      assert(tx.exists(toBytes(k)) == working.contains(k), clue)
    }

    private def checkFullIteration(): Unit =
      assert(rows(tx.iterator(KeyRange.all)) == working.toVector, clue)

    private def checkRangeIteration(): Unit = {
      val (from, until) = randomBounds()
      assert(rows(tx.iterator(KeyRange(toBytes(from), until.map(toBytes)))) == inRange(working, from, until),
        s"$clue, range [$from, $until)")
      val prefix = randomKey().take(1)
      assert(rows(tx.iterator(KeyRange.prefix(toBytes(prefix)))) == working.toVector.filter(_._1.startsWith(prefix)),
        s"$clue, prefix $prefix")
    }

    /** Spark evicts while it iterates: delete (or overwrite) each row just returned. */
    private def removeWhileIterating(): Unit = {
      val (from, until) = randomBounds()
      val expected = inRange(working, from, until)
      val it = tx.iterator(KeyRange(toBytes(from), until.map(toBytes)))
      val seen = Vector.newBuilder[(Key, Vector[Byte])]
      try it.foreach { kv =>
        val k = toKey(kv.key)
        seen += k -> kv.value.toVector
        rnd.nextInt(3) match {
          case 0 => tx.delete(kv.key); working -= k
          case 1 => val v = randomValue(); tx.put(kv.key, v.toArray); working += k -> v
          case _ => ()
        }
      } finally it.close()
      assert(seen.result() == expected, s"$clue, rows seen while removing")
    }

    private def commit(): Unit = {
      val p = point(engine.committed.version + 1, tx.numKeys)
      engine.commit(tx, p)
      beforeLastCommit = Some(committed)
      afterNewVersion(p)
    }

    /** Applying a transaction's change records must give exactly what committing it gives. */
    private def replayInsteadOfCommit(): Unit = {
      val changes = tx.changes.toVector
      val p = point(engine.committed.version + 1, tx.numKeys)
      tx.discard()
      engine.replay(changes.iterator, p)
      beforeLastCommit = None // a replay cannot be undone
      afterNewVersion(p)
    }

    private def afterNewVersion(p: CommitPoint): Unit = {
      committed = working
      assert(engine.committed == p, clue)
      assert(engine.committed.numKeys == committed.size, s"$clue: exact numKeys after commit")
      assert(committedRows(engine).size == committed.size, s"$clue: rows in RocksDB after commit")
      assert(rows(engine.committedRange(KeyRange.all)) == committed.toVector, clue)
      tx = engine.begin()
      assert(tx.numKeys == committed.size, clue)
    }

    private def abort(): Unit = {
      tx.discard()
      working = committed
      // Half the time keep using the discarded transaction: discard must leave it clean.
      if (rnd.nextBoolean()) tx = engine.begin()
      assert(tx.numKeys == committed.size, clue)
      assert(rows(engine.committedRange(KeyRange.all)) == committed.toVector, s"$clue: abort touched RocksDB")
    }

    private def rollback(): Unit = beforeLastCommit match {
      case Some(previous) =>
        tx.discard()
        val restored = engine.rollbackLastCommit()
        assert(restored.version == engine.committed.version, clue)
        committed = previous
        working = previous
        beforeLastCommit = None
        assert(engine.committed.numKeys == previous.size, clue)
        assert(rows(engine.committedRange(KeyRange.all)) == previous.toVector, s"$clue: rows after rollback")
        tx = engine.begin()
      case None =>
        assert(engine.committedBeforeLastCommit.isEmpty, clue)
    }
  }

  for (seed <- Seq(7L, 42L, 20240601L)) {
    test(s"random writes read like a sorted map across commits, replays, aborts and rollbacks (seed $seed)") {
      withEngine(newTempPath("db")) { engine =>
        new Run(seed, engine).run(steps = 4000)
      }
    }
  }

  // Every write past the first few goes to RocksDB in the background, in hand-overs of 1 and 3
  // writes: reads, iterators, aborts, rollbacks and replays must not tell the difference.
  for ((rows, seed) <- Seq(1 -> 11L, 3 -> 12L, 3 -> 20240602L)) {
    test(s"the model run also holds when writes go to the database in the background ($rows per hand-over, seed $seed)") {
      withEngine(newTempPath("db"), EngineOptions(backgroundWriteRows = rows)) { engine =>
        new Run(seed, engine).run(steps = 4000)
      }
    }
  }

  test("the model run also holds with the hot-state cache answering reads while writes go ahead in the background") {
    txstate.compat.ScalaLibrary.Using.resource(
      TxEngine.open(newTempPath("db"), EngineOptions(backgroundWriteRows = 2), new HotStateCache(1L << 20))) { engine =>
      new Run(13L, engine).run(steps = 4000)
    }
  }

  test("the model run also holds when replays are written in many small chunks") {
    withEngine(newTempPath("db"), EngineOptions(replayChunkBytes = 16)) { engine =>
      new Run(99L, engine).run(steps = 2000)
    }
  }
}
