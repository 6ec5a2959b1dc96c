package txstate.engine

import org.rocksdb.{WriteBatch, WriteOptions}

import txstate.compat.ScalaLibrary.Using

/**
 * The upkeep of one engine's TTL index (the `by_time` family, [[TimeIndex]]; docs/ARCHITECTURE.md,
 * "Timestamped state and TTL"): built when a batch switches TTL on, cut by each commit below its
 * expiry cutoff, dropped when a commit switches TTL off, and read for expiry and the oldest write.
 *
 * Index entries are derived data: a stale one is allowed (expiry checks each row's stamp), a missing
 * one is not. So the index is built ahead of the commit that records the switch, and the only state
 * kept here is whether this database already built it for a start not yet committed.
 *
 * Owner's thread only. Writes throw RocksDB's exceptions as they are: the engine turns them into
 * its refused-write error.
 */
private[engine] final class TimeIndexUpkeep(writeOptions: WriteOptions, chunkBytes: Long) {
  // The start of an index this database built for a batch that switched TTL on and did not commit
  // (it aborted): its retry at the same batch time need not build it again. Forgotten at every new
  // version and database, since the index then indexes other rows.
  private var builtSince: Option[Long] = None

  /**
   * The index start of a batch with TTL at `nowMs`: the committed one, else `nowMs` (this batch
   * switches TTL on), building the index of the rows already stored first unless it is built.
   */
  def startFor(database: LocalDatabase, committed: CommitPoint, nowMs: Long): Long =
    committed.timeIndexSinceMs.getOrElse {
      if (!builtSince.contains(nowMs)) build(database, nowMs)
      nowMs
    }

  /**
   * The index writes in the last chunk of a commit of `point` over `committed`: entries older than
   * the transaction's expiry cutoff `cut` go (every row they could name is expired by it or has a
   * newer entry), or the whole index when the commit switches TTL off. A replay passes no cut: its
   * stale entries are allowed to stay.
   */
  def atCommit(database: LocalDatabase, committed: CommitPoint, point: CommitPoint, cut: Option[Long],
      last: WriteBatch): Unit =
    if (dropping(committed, point)) drop(database, last)
    else cut.foreach { c =>
      val range = TimeIndex.before(c)
      last.deleteRange(database.byTime, range.from, range.until.get)
    }

  /** Before a replayed version's rows (which index themselves): the index its batch built, if it switched TTL on. */
  def buildForReplay(database: LocalDatabase, committed: CommitPoint, point: CommitPoint): Unit =
    point.timeIndexSinceMs.filter(_ => committed.timeIndexSinceMs.isEmpty).foreach(build(database, _))

  /** True when committing `point` over `committed` switches TTL off, dropping the whole index. */
  def dropping(committed: CommitPoint, point: CommitPoint): Boolean =
    point.timeIndexSinceMs.isEmpty && committed.timeIndexSinceMs.isDefined

  /** Entries written before `cutoffMs`, oldest first. */
  def before(database: LocalDatabase, cutoffMs: Long): KeyValueIterator =
    database.familyRange(database.byTime, None, TimeIndex.before(cutoffMs), stampedValues = false)

  /**
   * The oldest write time among the live rows `applies` selects (None while TTL is off or the store
   * is empty). Skips at most `maxStale` entries left behind by rewrites.
   */
  def oldestWriteMs(database: LocalDatabase, committed: CommitPoint, applies: Array[Byte] => Boolean,
      maxStale: Int): Option[Long] =
    committed.timeIndexSinceMs.flatMap { since =>
      Using.resource(before(database, Long.MaxValue)) { entries =>
        entries.take(maxStale).map(e => (TimeIndex.timeOf(e.key), TimeIndex.rowKeyOf(e.key))).collectFirst {
          case (time, key) if applies(key) && database.stampOf(key).exists(_.knownTimeMs.getOrElse(since) == time) => time
        }
      }
    }

  /** A new version or a new database: an index built for an uncommitted start no longer matches its rows. */
  def forgetBuilt(): Unit = builtSince = None

  private def drop(database: LocalDatabase, last: WriteBatch): Unit =
    last.deleteRange(database.byTime, TimeIndex.everything.from, TimeIndex.everything.until.get)

  /**
   * Indexes every stored row by its write time, rows of unknown time at `sinceMs` (TTL switched on
   * at that batch time). O(rows), once per switch-on; a batch that aborts after it leaves only
   * entries the index may hold anyway.
   */
  private def build(database: LocalDatabase, sinceMs: Long): Unit = {
    Using.resource(new ChunkedWriter(database, writeOptions, chunkBytes, RowFormat.Raw)) { writer =>
      Using.resource(database.range(None, KeyRange.all)) { rows =>
        rows.foreach(row => writer.raw(database.byTime, TimeIndex.key(row.written.knownTimeMs.getOrElse(sinceMs), row.key),
          Some(Array.emptyByteArray)))
      }
      writer.finish(_ => ())
    }
    builtSince = Some(sinceMs)
  }
}
