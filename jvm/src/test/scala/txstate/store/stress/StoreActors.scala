package txstate.store.stress

import java.util.Random
import java.util.concurrent.atomic.{AtomicBoolean, AtomicReference}
import java.util.concurrent.locks.LockSupport

import scala.util.control.NonFatal

import txstate.engine.KeyRange
import txstate.store.{FollowerReplica, StoreInstance}
import txstate.store.stress.StressModel.{bytes, drain, rowsOf}

/**
 * What the actors of a schedule do, each on its own thread, as Spark's tasks, maintenance threads
 * and readers do to one store. Each draws its decisions from a Random of its own (seeded from the
 * schedule's seed), so they replay with the seed. Loops run until `stop` is set; their pacing parks
 * only spread their calls out, and nothing waits on time for another actor.
 */
final class StoreActors(world: StressWorld) {
  import world.{checks, model}

  /**
   * Commits `count` batches on `inst` from `from`, as a query's tasks do: each batch opens on the
   * version the last one committed (a load, reused after the first), checks that it holds exactly
   * that version's rows, then puts and removes keys, early-committing now and then. `after` runs
   * after each commit. Returns the last version committed.
   */
  def write(inst: StoreInstance, from: Long, count: Int, random: Random, label: String)(after: Long => Unit): Long =
    (1 to count).foldLeft(from) { (v, _) =>
      val batch = inst.openBatch(world.at(v))
      checks.saw(s"$label ${batch.loaded.path}")
      world.expectRows(s"$label loads exactly the version asked for (${batch.loaded.path})", v, rowsOf(batch))
      val rows = (1 to 1 + random.nextInt(6)).foldLeft(model.rowsAt(v).get) { (rows, i) =>
        val key = f"k${random.nextInt(16)}%02d"
        val next =
          if (random.nextInt(4) == 0) { batch.delete(bytes(key)); rows - key }
          else { val value = s"v${v + 1}-$i"; batch.put(bytes(key), bytes(value)); rows + (key -> value) }
        if (random.nextInt(4) == 0) batch.earlyCommit()
        next
      }
      model.recordRows(v + 1, rows)
      val report = batch.commit()
      checks.expect(s"$label commits the next version", report.version == v + 1, s"committed ${report.version}")
      model.recordCommit(report.version, report.point.checkpointId)
      after(report.version)
      report.version
    }

  /** Spark's maintenance thread for `inst`: upload what is staged, clean up, again until `stop`. */
  def maintain(inst: => Option[StoreInstance], stop: AtomicBoolean, random: Random): Unit =
    while (!stop.get) {
      inst.foreach { i =>
        i.uploadSnapshot()
        i.cleanup(world.retain, world.graceMs)
      }
      LockSupport.parkNanos(random.nextInt(2000000).toLong)
    }

  /** A follower moving to the newest committed version, and checking the rows it then serves. */
  def follow(replica: FollowerReplica, stop: AtomicBoolean, random: Random): Unit =
    while (!stop.get) {
      val v = model.newest
      world.loading("the follower reaches the newest version", v)(replica.advanceTo(v, world.id(v))).foreach { _ =>
        replica.readCommittedView(1000)(view => (view.point.version, drain(view.range(KeyRange.all)))).foreach {
          case (seen, rows) => world.expectRows("the follower serves exactly a committed version", seen, rows)
        }
      }
      LockSupport.parkNanos(random.nextInt(3000000).toLong)
    }

  /**
   * A reader of the instance's committed view from another thread (a query beside the batch): every
   * view is exactly some committed version, never part of a batch.
   */
  def readViews(inst: AtomicReference[Option[StoreInstance]], stop: AtomicBoolean, random: Random): Unit =
    while (!stop.get) {
      inst.get.foreach { i =>
        i.readCommittedView(50)(view => (view.point.version, drain(view.range(KeyRange.all)))).foreach {
          case (seen, rows) => world.expectRows("a committed view is one whole batch", seen, rows)
        }
      }
      LockSupport.parkNanos(random.nextInt(2000000).toLong)
    }

  /**
   * Checks, until `stop`, that every stored file a listed snapshot names is there, whole. A file
   * found missing is the store's fault only if its manifest is still listed after (cleanup deletes
   * a manifest before the files only it named, and an upload writes the files before the manifest).
   */
  def watchSnapshots(stop: AtomicBoolean, random: Random): Unit = {
    val reader = world.reader()
    while (!stop.get) {
      reader.snapshots().foreach { e =>
        val id = e.id.get
        def listed = reader.snapshotIds().contains((e.version, id))
        val manifest =
          try Some(reader.readManifest(e.version, id))
          catch {
            case NonFatal(ex) =>
              if (listed) checks.fail("a listed snapshot's manifest reads", s"snapshot of version ${e.version}", ex)
              None
          }
        manifest.foreach(_.files.foreach { f =>
          val broken = try { reader.verifyStored(f); None } catch { case NonFatal(ex) => Some(ex) }
          val stillListed = broken.isDefined && listed
          checks.expect("every file a listed snapshot names exists", !stillListed,
            s"the snapshot of version ${e.version} ($id) names ${f.storedName}, which is gone or damaged " +
              s"while the snapshot is listed: ${broken.map(StressChecks.stack).getOrElse("")}")
        })
      }
      LockSupport.parkNanos(random.nextInt(2000000).toLong)
    }
  }

  /** A new instance loading an older retained version (Spark's state data source), then closing. */
  def readOldVersion(version: Long, label: String): Unit = {
    val inst = world.open(world.localDir(label), label, stable = false)
    try world.loading(s"$label loads a retained version", version)(inst.load(version, world.id(version))).foreach { _ =>
      val batch = inst.begin()
      try world.expectRows(s"$label loads exactly the version asked for", version, rowsOf(batch))
      finally batch.discard()
    } finally inst.close()
  }
}
