package txstate.store.stress

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.ConcurrentHashMap

import txstate.engine.{KeyRange, KeyValueIterator}
import txstate.store.StoreBatch

/**
 * What each committed version of the one store holds, as the schedule's writers made it: the truth
 * every load, view and snapshot is compared with. A version's rows are recorded before its commit
 * (so whoever can see the version finds it here), its checkpoint id after (format v2 loads name it).
 */
final class StressModel {
  private val rows = new ConcurrentHashMap[Long, Map[String, String]]()
  private val ids = new ConcurrentHashMap[Long, String]()
  @volatile private var newestCommitted = 0L
  @volatile private var newestWritten = 0L

  rows.put(0L, Map.empty)

  def recordRows(version: Long, at: Map[String, String]): Unit = {
    rows.put(version, at)
    newestWritten = math.max(newestWritten, version)
  }

  def recordCommit(version: Long, checkpointId: Option[String]): Unit = {
    checkpointId.foreach(ids.put(version, _))
    newestCommitted = math.max(newestCommitted, version)
  }

  def rowsAt(version: Long): Option[Map[String, String]] = Option(rows.get(version))

  /** The checkpoint id of a committed version (None for version 0 or one not committed). */
  def idOf(version: Long): Option[String] = Option(ids.get(version))

  def newest: Long = newestCommitted

  /**
   * Whether `version` may legitimately be gone: cleanup keeps the newest `retain` versions loadable
   * and nothing older. A load of such a version may fail; one of a newer version may not. The
   * newest counted is the one being committed: its changelog is written before the commit ends,
   * and a cleanup counts from it.
   */
  def mayBeCleanedUp(version: Long, retain: Int): Boolean = version < newestWritten - retain + 1
}

object StressModel {
  def bytes(s: String): Array[Byte] = s.getBytes(UTF_8)

  /** Every row an iterator yields, as strings; the iterator is closed. */
  def drain(it: KeyValueIterator): Map[String, String] =
    try it.map(kv => new String(kv.key, UTF_8) -> new String(kv.value, UTF_8)).toMap
    finally it.close()

  /** Every row a batch sees now (its open iterator is closed before the batch writes again). */
  def rowsOf(batch: StoreBatch): Map[String, String] = drain(batch.iterator(KeyRange.all))
}
