package txstate.engine

import java.nio.charset.StandardCharsets.UTF_8

import txstate.compat.ScalaLibrary.Using

/** Small helpers shared by the engine suites: readable keys and the exact contents of a view. */
object EngineTestKit {
  /** Sequences of unsigned byte values compared as RocksDB's bytewise comparator orders keys. */
  def lexicographic(a: Seq[Int], b: Seq[Int]): Int =
    a.iterator.zip(b.iterator).map { case (x, y) => x compare y }.find(_ != 0).getOrElse(a.length compare b.length)

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

  /**
   * The commit point the store makes for `tx` (StoreInstance.pointOf): the transaction's stamp and
   * TTL index start, in `formatVersion` (1 writes plain rows, as 0.1.0 did).
   */
  def pointOf(tx: Transaction, formatVersion: Int = CommitPoint.currentFormatVersion): CommitPoint = {
    val version = tx.base.version + 1
    CommitPoint(version, Some(s"id-$version"), formatVersion, 1000L + version, tx.numKeys, tx.stamp, tx.timeIndexSinceMs)
  }

  /** Commits `writes` as a batch stamped `stamp` (with `ttl`, expiring first); returns the commit point. */
  def commitStamped(engine: TxEngine, stamp: WriteStamp, ttl: Option[TimeToLive] = None)
      (writes: Transaction => Unit): CommitPoint = {
    val tx = engine.begin(stamp, ttl)
    writes(tx)
    val p = pointOf(tx)
    engine.commit(tx, p)
    p
  }

  /** Rows of an iterator with their write stamps; closes the iterator. */
  def stampedStrings(it: KeyValueIterator): Vector[(String, String, WriteStamp)] =
    try it.map(kv => (str(kv.key), str(kv.value), kv.written)).toVector finally it.close()

  /** Every committed row with its write stamp, read straight from RocksDB (the owner's reads, no view). */
  def committedStamped(engine: TxEngine): Vector[(String, String, WriteStamp)] =
    stampedStrings(engine.committedRange(KeyRange.all))

  /**
   * Every row of the engine's committed view, with its write stamp. The view never goes back: after
   * a rollback it keeps showing the rolled-back version until the re-run commits.
   */
  def viewRows(engine: TxEngine): Vector[(String, String, WriteStamp)] =
    engine.readCommittedView(1000)(view => stampedStrings(view.range(KeyRange.all)))
      .getOrElse(throw new AssertionError("the engine shows no committed view"))

  def withEngine[A](dir: java.io.File, options: EngineOptions = EngineOptions())(f: TxEngine => A): A =
    Using.resource(TxEngine.open(dir, options))(f)
}
