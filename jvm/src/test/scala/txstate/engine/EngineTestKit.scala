package txstate.engine

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Using

/** Small helpers shared by the engine suites: readable keys and the exact contents of a view. */
object EngineTestKit {
  def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  def bytes(values: Int*): Array[Byte] = values.map(_.toByte).toArray
  def str(bytes: Array[Byte]): String = new String(bytes, UTF_8)

  /** Rows of an iterator as comparable (key, value) pairs; closes the iterator. */
  def drain(it: KeyValueIterator): Vector[(Seq[Byte], Seq[Byte])] =
    try it.map(kv => (kv.key.toSeq, kv.value.toSeq)).toVector finally it.close()

  def strings(it: KeyValueIterator): Vector[(String, String)] =
    try it.map(kv => (str(kv.key), str(kv.value))).toVector finally it.close()

  /** Every committed row of the engine, read straight from RocksDB (no transaction). */
  def committedRows(engine: TxEngine): Vector[(Seq[Byte], Seq[Byte])] = drain(engine.committedRange(KeyRange.all))

  def committedStrings(engine: TxEngine): Vector[(String, String)] = strings(engine.committedRange(KeyRange.all))

  def point(version: Long, numKeys: Long): CommitPoint =
    CommitPoint(version, Some(s"id-$version"), CommitPoint.currentFormatVersion, 1000L + version, numKeys)

  /** Commits `writes` on top of the engine's current version; returns the new commit point. */
  def commitWith(engine: TxEngine)(writes: Transaction => Unit): CommitPoint = {
    val tx = engine.begin()
    writes(tx)
    val p = point(engine.committed.version + 1, tx.numKeys)
    engine.commit(tx, p)
    p
  }

  def withEngine[A](dir: java.io.File, options: EngineOptions = EngineOptions())(f: TxEngine => A): A =
    Using.resource(TxEngine.open(dir, options))(f)
}
