package txstate.spark

import java.util.concurrent.ConcurrentHashMap

/**
 * The row codec of each column family a provider has seen: registered when a task creates or
 * registers a family, kept for the provider's lifetime (later batches and queries decode with it).
 */
private[spark] final class RowCodecs(default: RowCodec) {
  private val byFamily = new ConcurrentHashMap[String, RowCodec]()
  byFamily.put(ColumnFamilies.defaultName, default)

  def get(family: String): Option[RowCodec] = Option(byFamily.get(family))
  def register(family: String, codec: RowCodec): Unit = byFamily.put(family, codec)
}
