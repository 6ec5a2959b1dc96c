package txstate.spark

import scala.util.Random

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/**
 * Random micro-batches through Spark's StateStore API against a model of every committed version:
 * commits, aborts, re-runs of the last batches, reads of retained older versions (the state data
 * source), provider restarts on the same or a fresh local directory, snapshots and cleanup.
 */
final class ProviderModelTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = StructType(Seq(StructField("k", IntegerType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)
  private val retain = 4

  private val settings = Seq(
    TxStateConf.prefix + "snapshotInterval" -> "3",
    "spark.sql.streaming.minBatchesToRetain" -> retain.toString)

  private def read(store: TxStateStore): Map[Int, Long] =
    pairs(store.iterator(default), keySchema, valueSchema).map { case (k, v) =>
      k.head.asInstanceOf[Int] -> v.head.asInstanceOf[Long]
    }.toMap

  for (seed <- Seq(3L, 17L, 29L)) {
    test(s"random batches, re-runs, old-version reads and restarts match the model of every version (seed $seed)") {
      val rnd = new Random(seed)
      val root = newCheckpointRoot()
      var local = newTempDir("local")
      var versions = Vector(Map.empty[Int, Long]) // versions(v) = the state of version v on the live lineage
      var provider = newProvider(root, keySchema, valueSchema, localDir = local, settings = settings)
      def latest = versions.size - 1
      try {
        for (step <- 0 until 80) {
          val clue = s"seed $seed, step $step, latest $latest"
          rnd.nextInt(10) match {
            case n if n < 6 =>
              // A batch: usually the next one, sometimes a re-run of one of the last two.
              val base = if (n == 0 && latest > 0) latest - 1 - rnd.nextInt(math.min(2, latest)) else latest
              val store = provider.getStore(base)
              var model = versions(base)
              assert(read(store) == model, s"$clue: loaded version $base")
              (0 until 1 + rnd.nextInt(30)).foreach { _ =>
                val k = rnd.nextInt(40)
                if (rnd.nextInt(4) == 0) { store.remove(key(k), default); model -= k }
                else { val v = rnd.nextLong(); store.put(key(k), value(v), default); model += k -> v }
              }
              assert(store.metrics.numKeys == model.size, clue)
              if (rnd.nextInt(5) == 0) store.abort()
              else {
                assert(store.commit() == base + 1, clue)
                versions = versions.take(base + 1) :+ model
              }
            case 6 =>
              // The state data source reads a retained older version.
              val v = math.max(0, latest - rnd.nextInt(retain - 1))
              val store = provider.getReadStore(v)
              assert(read(store) == versions(v), s"$clue: read version $v")
              store.release()
            case 7 =>
              provider.doMaintenance()
            case _ =>
              provider.close()
              if (rnd.nextBoolean()) local = newTempDir("local")
              provider = newProvider(root, keySchema, valueSchema, localDir = local, settings = settings)
          }
        }
        val last = provider.getStore(latest)
        assert(read(last) == versions(latest))
        last.abort()
      } finally provider.close()
    }
  }

  test("snapshot and cleanup maintenance on another thread never disturbs the batches or the checkpoint") {
    val root = newCheckpointRoot()
    val conf = Seq(TxStateConf.prefix + "snapshotInterval" -> "2", "spark.sql.streaming.minBatchesToRetain" -> "3")
    val rnd = new Random(1)
    var expected = Map.empty[Int, Long]
    val failures = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]()
    withProvider(newProvider(root, keySchema, valueSchema, settings = conf)) { p =>
      @volatile var running = true
      val maintenance = new Thread(() => {
        while (running) {
          try { p.doSnapshotMaintenance(); p.doCleanupMaintenance() }
          catch { case e: Throwable => failures.add(e) }
          Thread.sleep(2)
        }
      }, "txstate-test-maintenance")
      maintenance.start()
      try {
        (0 until 40).foreach { v =>
          val store = p.getStore(v)
          (0 until 20).foreach { _ =>
            val k = rnd.nextInt(50)
            if (rnd.nextInt(3) == 0) { store.remove(key(k), default); expected -= k }
            else { val x = rnd.nextLong(); store.put(key(k), value(x), default); expected += k -> x }
          }
          store.commit()
        }
      } finally {
        running = false
        maintenance.join()
      }
      p.doMaintenance()
    }
    assert(failures.isEmpty, s"maintenance threw: ${failures.peek()}")
    withProvider(newProvider(root, keySchema, valueSchema, settings = conf)) { p =>
      val store = p.getStore(40)
      assert(read(store) == expected)
      val custom = store.metrics.customMetrics.map { case (m, v) => m.name -> v }
      assert(custom("txstateChangelogsReplayed") <= 2, "rebuilt from a recent snapshot, not from version 1")
      store.abort()
    }
  }

  test("after cleanup every version within minBatchesToRetain stays loadable by a new provider") {
    val root = newCheckpointRoot()
    val conf = Seq(TxStateConf.prefix + "snapshotInterval" -> "2", "spark.sql.streaming.minBatchesToRetain" -> "3")
    var versions = Vector(Map.empty[Int, Long])
    withProvider(newProvider(root, keySchema, valueSchema, settings = conf)) { p =>
      (0 until 12).foreach { v =>
        val store = p.getStore(v)
        store.put(key(v), value(v.toLong), default)
        if (v % 3 == 0) store.remove(key(v - 1), default)
        store.commit()
        versions :+= (versions.last + (v -> v.toLong) - (if (v % 3 == 0) v - 1 else Int.MinValue))
        p.doMaintenance() // upload the staged snapshot, then clean up below the newest one old enough
      }
    }
    assert(versions.size == 13)
    for (v <- 10 to 12) { // latest - minBatchesToRetain + 1 .. latest (Spark reads batch X through version X + 1)
      withProvider(newProvider(root, keySchema, valueSchema, settings = conf)) { p =>
        val store = p.getReadStore(v)
        try assert(read(store) == versions(v), s"version $v")
        finally store.release()
      }
    }
  }

  test("a stale local directory whose missing changelogs were cleaned up is rebuilt from a snapshot") {
    val root = newCheckpointRoot()
    val conf = Seq(TxStateConf.prefix + "snapshotInterval" -> "2", "spark.sql.streaming.minBatchesToRetain" -> "2")
    val stale = newTempDir("stale-local")
    def batch(p: TxStateStoreProvider, v: Int): Unit = {
      val store = p.getStore(v)
      store.put(key(v % 5), value(v.toLong), default)
      store.commit()
      p.doMaintenance()
    }
    withProvider(newProvider(root, keySchema, valueSchema, localDir = stale, settings = conf))(p => (0 until 2).foreach(batch(p, _)))
    withProvider(newProvider(root, keySchema, valueSchema, settings = conf))(p => (2 until 14).foreach(batch(p, _)))
    assert(!new java.io.File(new java.net.URI(root + "/0/0/3.txlog")).exists(), "cleanup removed the old changelogs")
    withProvider(newProvider(root, keySchema, valueSchema, localDir = stale, settings = conf)) { p =>
      val store = p.getStore(14)
      assert(read(store) == (9 until 14).map(v => (v % 5) -> v.toLong).toMap)
      store.abort()
    }
  }
}
