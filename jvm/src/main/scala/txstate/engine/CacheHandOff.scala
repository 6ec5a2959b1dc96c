package txstate.engine

/**
 * What the engine tells this store's part of the executor's hot-state cache, path by path, so that
 * the cache always equals what `LocalDatabase.stored` answers for the engine's own reads
 * (docs/ARCHITECTURE.md, "Hot-state cache"): a read that misses admits the stamped row it found, a
 * commit writes its rows through to keys already cached, and every other change of rows makes the
 * cache forget them. Forgetting too much costs a read; forgetting too little is a stale read.
 *
 * Owner's thread only; queries and followers read committed views and never come here.
 */
private[engine] final class CacheHandOff(store: StoreCache) {

  /**
   * A committed row with its stored bytes (what undoing a write of the key restores): from the
   * cache, which holds stamped rows as stored, or from `database`, admitted when `admitting`.
   */
  def read(database: LocalDatabase, key: BytesKey, admitting: Boolean): StoredRow = {
    val cached = store.get(key)
    if (cached != null) StoredRow.Stamped(cached)
    else {
      val stored = database.stored(key.bytes)
      admit(key, stored, admitting)
      stored
    }
  }

  /** Committed values of `keys`, in order: cached ones from the heap, the others in one native call. */
  def readAll(database: LocalDatabase, keys: Seq[BytesKey], admitting: Boolean): Seq[Option[Array[Byte]]] = {
    val cached = keys.map(k => Option(store.get(k)).map(StoredRow.Stamped(_): StoredRow))
    val missing = keys.zip(cached).collect { case (k, None) => k }
    val stored = database.storedAll(missing.map(_.bytes))
    missing.zip(stored).foreach { case (k, row) => admit(k, row, admitting) }
    val fromDatabase = stored.iterator
    cached.map(_.getOrElse(fromDatabase.next()).value)
  }

  /**
   * `changes`, telling the cache of each as it goes by: the database will hold exactly these rows,
   * written in `format`. A put gives a cached key its new stored row (stamped: the cache holds
   * stamped rows only, so a format 1 write makes it forget the key); deletes make it forget.
   */
  def telling(changes: Iterator[ChangeRecord], format: RowFormat): Iterator[ChangeRecord] =
    if (!store.holdsAny) changes
    else format match {
      case RowFormat.Stamped(stamp, _) => changes.map { change =>
        change match {
          // Encoded only for a key that is cached: most written keys are not.
          case ChangeRecord.Put(k, v) => store.written(k, StampedValues.encode(stamp, v))
          case other => forgetIn(other)
        }
        change
      }
      case _ => forgetting(changes)
    }

  /**
   * Tells the cache of `changes` the database already holds, as [[telling]] does; made only when
   * this store has something cached, since walking a batch's rows copies each of them out.
   */
  def tell(changes: => Iterator[ChangeRecord], format: RowFormat): Unit =
    if (store.holdsAny) telling(changes, format).foreach(_ => ())

  /** `changes`, making the cache forget each key they touch (a replay: its rows are not known to be hot). */
  def forgetting(changes: Iterator[ChangeRecord]): Iterator[ChangeRecord] =
    if (!store.holdsAny) changes else changes.map { change => forgetIn(change); change }

  /** Before the last commit is undone: the keys it touched, or the whole store if it deleted a range. */
  def forgetTouched(touched: TouchedKeys): Unit = {
    touched.points.iterator.foreach(store.forget)
    if (touched.ranges.nonEmpty) store.forgetAll()
  }

  /** The whole store, in O(1): a failed write, undone early commits, a replaced database. */
  def forgetAll(): Unit = store.forgetAll()

  def stats: CacheStats = store.stats

  def close(): Unit = store.close()

  // Stamped rows only: format 1 rows (0.1.0's) move to the stamped family when written, and a cached
  // row must carry its stamp, so a cached read can be undone and TTL needs no second look.
  private def admit(key: BytesKey, row: StoredRow, admitting: Boolean): Unit = row match {
    case StoredRow.Stamped(stored) if admitting => store.admit(key, stored)
    case _ => ()
  }

  private def forgetIn(change: ChangeRecord): Unit = change match {
    case ChangeRecord.Put(k, _) => store.forget(k)
    case ChangeRecord.Delete(k) => store.forget(k)
    case _: ChangeRecord.DeleteRange => store.forgetAll()
  }
}
