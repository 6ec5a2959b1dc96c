package txstate.spark

import org.slf4j.LoggerFactory

import txstate.engine.HotStateCache

/**
 * The executor JVM's one hot-state cache, shared by every txstate store it hosts
 * (docs/ARCHITECTURE.md, "Hot-state cache"). Its budget is the newest `hotCacheSizeMB` a store
 * opened with: a query started with another setting in the same JVM resizes it, and says so.
 */
private[spark] object ExecutorHotCache {
  private val log = LoggerFactory.getLogger(getClass)
  private var cache: Option[HotStateCache] = None

  def sized(maxBytes: Long): HotStateCache = synchronized {
    cache match {
      case Some(c) =>
        if (c.maxBytes != maxBytes) {
          log.info(s"txstate: hot-state cache of this executor resized from ${c.maxBytes} to $maxBytes bytes " +
            s"(${TxStateConf.prefix}hotCacheSizeMB)")
          c.resize(maxBytes)
        }
        c
      case None =>
        val c = new HotStateCache(maxBytes)
        cache = Some(c)
        c
    }
  }

  /** Heap the cache's entries hold now (0 before a store made it); the heap budget counts it. */
  def usedBytes: Long = synchronized(cache).fold(0L)(_.usedBytes)
}
