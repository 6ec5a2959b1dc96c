package txstate.store

import java.util.{HashMap => JHashMap}

import org.apache.hadoop.fs.Path

/**
 * One lock per store checkpoint directory in this JVM, for the maintenance that writes or deletes
 * there: a snapshot upload and a cleanup round (docs/ARCHITECTURE.md, "A cleanup elsewhere during
 * a load").
 *
 * Two instances of one store can live in one executor at once: Spark 4.1+ runs the maintenance of
 * a provider it unloads while the query's next provider already works on the same store. An upload
 * lists the stored files it will share, then writes a manifest naming them; a cleanup round run
 * between the two by the other instance could delete a shared file as an orphan (no manifest it
 * read names it), leaving a snapshot that lists a file that is gone. Holding this lock for the
 * whole upload and the whole round keeps them apart.
 *
 * An entry lives while someone holds or waits for it, so the map does not grow with every store the
 * executor ever served.
 */
private[store] object CheckpointMaintenanceLocks {
  private final class Entry { var users = 0 } // guarded by `entries`
  private val entries = new JHashMap[String, Entry]

  /** Runs `work` holding the lock of the checkpoint directory `root`. */
  def holding[T](root: Path)(work: => T): T = {
    val key = root.toUri.normalize.toString
    val entry = entries.synchronized {
      val e = entries.computeIfAbsent(key, _ => new Entry)
      e.users += 1
      e
    }
    try entry.synchronized(work)
    finally entries.synchronized {
      entry.users -= 1
      if (entry.users == 0) entries.remove(key)
    }
  }

  /** The directories with a holder or a waiter now (tests). */
  private[store] def inUse: Set[String] = entries.synchronized(entries.keySet.toArray(Array.empty[String]).toSet)
}
