package txstate.engine

/**
 * A read-only view of one committed version of a store (READ_COMMITTED, docs/ARCHITECTURE.md, "Interactive queries"), for readers on
 * threads other than the engine's owner, such as interactive queries. It never shows a version in
 * flight: sub-batches of an early-committed version and replay chunks are invisible to it.
 *
 * A view is valid only inside the `readCommittedView` call that handed it out; iterators it returns
 * are closed when that call ends, if the reader has not closed them first.
 */
trait CommittedView {
  /** The version this view shows. */
  def point: CommitPoint

  /** The committed value of `key`, if any. */
  def get(key: Array[Byte]): Option[Array[Byte]]

  /** The committed row of `key` with when it was last written, if any. */
  def row(key: Array[Byte]): Option[KeyValue]

  /** The committed rows in `range`, in key order, each with when it was last written. */
  def range(range: KeyRange): KeyValueIterator
}
