package txstate.query

import java.nio.file.Files

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.slf4j.LoggerFactory

import txstate.engine.CommittedView
import txstate.spark.RowCodec
import txstate.store.{LocalDirectory, StoreInstance, StoreOptions}

/**
 * Store partitions read from checkpoint files, for queries of stores no running query has
 * loaded. A copy is built in a temporary directory (newest snapshot plus changelogs) and kept a
 * little while, so paging through it, or asking again after the next batch (which replays one
 * changelog), does not rebuild it. Copies idle for two minutes, or beyond the eighth, are closed
 * and deleted.
 */
private[query] object CheckpointStores {
  private val log = LoggerFactory.getLogger(getClass)
  private val maxCopies = 8
  private val idleMs = 2L * 60 * 1000

  private final class Copy(val instance: StoreInstance) {
    @volatile var lastUsedMs: Long = System.currentTimeMillis()
  }

  private val copies = mutable.LinkedHashMap.empty[String, Copy]

  sys.addShutdownHook(synchronized { copies.values.foreach(close); copies.clear() })

  /** Runs `read` on `store`'s committed `version` as its checkpoint files hold it. */
  def read[T](store: StateStoreId, version: Long, hadoopConf: Configuration, codec: RowCodec)
      (read: (RowCodec, CommittedView) => T): T = {
    val copy = acquire(store, hadoopConf)
    copy.synchronized {
      copy.lastUsedMs = System.currentTimeMillis()
      copy.instance.load(version, None)
      copy.instance.readCommittedView(waitMs = 0)(view => read(codec, view)).getOrElse(
        throw QueryErrors.noCommittedView(store.toString))
    }
  }

  private def acquire(store: StateStoreId, hadoopConf: Configuration): Copy = synchronized {
    val now = System.currentTimeMillis()
    val expired = copies.filter { case (_, c) => now - c.lastUsedMs > idleMs }.keys.toSeq
    expired.foreach(k => copies.remove(k).foreach(close))
    val key = store.storeCheckpointLocation().toString
    copies.remove(key) match {
      case Some(copy) =>
        copies.put(key, copy) // most recently used last
        copy
      case None =>
        while (copies.size >= maxCopies) copies.remove(copies.head._1).foreach(close)
        val local = LocalDirectory.temporary(Files.createTempDirectory("txstate-query-").toFile)
        val copy = new Copy(StoreInstance.open(local, store.storeCheckpointLocation(), hadoopConf, StoreOptions(),
          s"checkpoint copy of $store"))
        copies.put(key, copy)
        copy
    }
  }

  // Closing waits for a reader of that copy to finish (it holds the copy's lock).
  private def close(copy: Copy): Unit = copy.synchronized {
    try copy.instance.close()
    catch { case NonFatal(e) => log.warn(s"txstate: could not close the ${copy.instance.label}", e) }
  }
}
