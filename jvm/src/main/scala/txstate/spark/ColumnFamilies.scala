package txstate.spark

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable

import txstate.engine.KeyRange
import txstate.store.StoreBatch

/**
 * Spark column families as key spaces of one RocksDB column family: every key starts with its
 * family's 2-byte id. The name -> id registry is stored as ordinary rows under the reserved id
 * 0xFFFF, so creating or dropping a family commits, aborts and replays with the batch like any
 * other write. The default family is id 0 and is never stored.
 */
object ColumnFamilies {
  val defaultName = "default"
  val defaultId = 0
  private val registryId = 0xffff
  private val maxId = 0xfffe

  def prefix(id: Int): Array[Byte] = Array(((id >>> 8) & 0xff).toByte, (id & 0xff).toByte)

  def withPrefix(id: Int, key: Array[Byte]): Array[Byte] = {
    val out = new Array[Byte](key.length + 2)
    out(0) = ((id >>> 8) & 0xff).toByte
    out(1) = (id & 0xff).toByte
    System.arraycopy(key, 0, out, 2, key.length)
    out
  }

  def stripPrefix(key: Array[Byte]): Array[Byte] = java.util.Arrays.copyOfRange(key, 2, key.length)

  def familyRange(id: Int): KeyRange = KeyRange.prefix(prefix(id))

  /** True for the registry's own rows: state TTL never expires them. */
  def isRegistryKey(key: Array[Byte]): Boolean = key.length >= 2 && (key(0) & 0xff) == 0xff && (key(1) & 0xff) == 0xff

  private def registryKey(name: String): Array[Byte] = withPrefix(registryId, name.getBytes(UTF_8))

  /** The family ids a batch sees (registry rows included in its uncommitted writes). */
  def registered(tx: StoreBatch): Map[String, Int] = {
    val found = mutable.Map(defaultName -> defaultId)
    val it = tx.iterator(familyRange(registryId))
    try it.foreach(kv => found(new String(stripPrefix(kv.key), UTF_8)) = ByteBuffer.wrap(kv.value).getInt)
    finally it.close()
    found.toMap
  }

  /** Registers `name` in the batch if absent; returns its id. */
  def create(tx: StoreBatch, name: String): Int =
    registered(tx).getOrElse(name, {
      val id = (registered(tx).values.max + 1)
      if (id > maxId) throw TxStateErrors.tooManyColumnFamilies(name, maxId)
      tx.put(registryKey(name), ByteBuffer.allocate(4).putInt(id).array())
      id
    })

  /** Removes the family's rows and its registry entry; false when it does not exist. */
  def remove(tx: StoreBatch, name: String): Boolean =
    registered(tx).get(name).filter(_ != defaultId) match {
      case Some(id) =>
        val range = familyRange(id)
        range.until.foreach(until => tx.deleteRange(range.from, until))
        tx.delete(registryKey(name))
        true
      case None => false
    }
}
