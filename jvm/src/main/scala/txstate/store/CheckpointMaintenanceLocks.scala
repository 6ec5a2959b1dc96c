package txstate.store

import java.util.{HashMap => JHashMap}
import java.util.concurrent.atomic.AtomicLong

import org.apache.hadoop.fs.Path

/**
 * One lock per store checkpoint directory in this JVM, for the maintenance that writes or deletes
 * there: a snapshot upload and a cleanup round (docs/ARCHITECTURE.md, "Load paths"):
 * a load whose files a cleanup elsewhere deleted under it rebuilds instead.
 *
 * Two instances of one store can live in one executor at once: Spark 4.1+ runs the maintenance of
 * a provider it unloads while the query's next provider already works on the same store. An upload
 * lists the stored files it will share, then writes a manifest naming them; a cleanup round run
 * between the two by the other instance could delete a shared file as an orphan (no manifest it
 * read names it), leaving a snapshot that lists a file that is gone. Holding this lock for the
 * whole upload and the whole round keeps them apart.
 *
 * The same entries see the overlap this lock exists for: an instance's first load (a restarted
 * query's provider, catching up or rebuilding) while another instance's maintenance runs on the
 * same directory. Such a load is logged and counted ([[loadsBesideMaintenance]]), so a restart
 * storm can show that it caused the overlap it tests for, and an operator reading the log can tell
 * a slow load that shared the checkpoint.
 *
 * An entry lives while someone holds, waits for it or loads, so the map does not grow with every
 * store the executor ever served.
 */
private[store] object CheckpointMaintenanceLocks {
  /** One load under way; `besideMaintenance` once another owner's maintenance ran during it. */
  private final class Load(val owner: AnyRef) { var besideMaintenance = false } // guarded by `entries`
  /** Guarded by `entries`: who uses the directory now, who maintains it, who loads from it. */
  private final class Entry {
    var users = 0
    var maintainer: Option[AnyRef] = None
    var loads = List.empty[Load]
  }
  private val entries = new JHashMap[String, Entry]
  private val overlappingLoads = new AtomicLong

  private def keyOf(root: Path): String = root.toUri.normalize.toString

  private def enter(key: String): Entry = entries.synchronized {
    val e = entries.computeIfAbsent(key, _ => new Entry)
    e.users += 1
    e
  }

  private def leave(key: String, entry: Entry): Unit = entries.synchronized {
    entry.users -= 1
    if (entry.users == 0) entries.remove(key)
  }

  /** Runs `work` of `owner` (an instance's upload or cleanup round) holding the lock of the checkpoint directory `root`. */
  def holding[T](root: Path, owner: AnyRef)(work: => T): T = {
    val key = keyOf(root)
    val entry = enter(key)
    try entry.synchronized {
      entries.synchronized {
        entry.maintainer = Some(owner)
        entry.loads.filterNot(_.owner eq owner).foreach(_.besideMaintenance = true)
      }
      try work finally entries.synchronized { entry.maintainer = None }
    } finally leave(key, entry)
  }

  /**
   * Runs `work`, the first load of `owner` from the checkpoint directory `root` (it takes no lock),
   * and says whether another owner's maintenance ran there at some moment of it (then counted).
   */
  def loading[T](root: Path, owner: AnyRef)(work: => T): (T, Boolean) = {
    val key = keyOf(root)
    val entry = enter(key)
    val load = new Load(owner)
    entries.synchronized {
      load.besideMaintenance = entry.maintainer.exists(_ ne owner)
      entry.loads ::= load
    }
    try {
      val result = work
      val beside = entries.synchronized(load.besideMaintenance)
      if (beside) overlappingLoads.incrementAndGet()
      (result, beside)
    } finally {
      entries.synchronized(entry.loads = entry.loads.filterNot(_ eq load))
      leave(key, entry)
    }
  }

  /** First loads in this JVM during which another instance's maintenance of the same store ran. */
  def loadsBesideMaintenance: Long = overlappingLoads.get

  /** The directories with a holder, a waiter or a load now (tests). */
  private[store] def inUse: Set[String] = entries.synchronized(entries.keySet.toArray(Array.empty[String]).toSet)
}
