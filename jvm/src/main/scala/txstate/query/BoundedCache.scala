package txstate.query

/** A small thread-safe map that forgets its least recently used entries beyond `capacity`. */
private[query] final class BoundedCache[K, V](capacity: Int) {
  private val entries = new java.util.LinkedHashMap[K, V](16, 0.75f, true) {
    override def removeEldestEntry(eldest: java.util.Map.Entry[K, V]): Boolean = size() > capacity
  }

  def get(key: K): Option[V] = entries.synchronized(Option(entries.get(key)))
  def put(key: K, value: V): Unit = entries.synchronized(entries.put(key, value))
}
