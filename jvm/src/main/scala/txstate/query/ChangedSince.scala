package txstate.query

import txstate.engine.WriteStamp

/**
 * A filter of the rows a read returns (KIP-258's timestamped state): only those last written at
 * or after a batch, or at or after a batch time (the offset log's `batchTimestampMs` of the batch
 * that wrote them). A row whose last write is not known (written by release 0.1.0, migrated, or
 * written outside a streaming query) is never returned: nothing says it changed since.
 */
private[query] sealed trait ChangedSince extends Serializable {
  def accepts(written: WriteStamp): Boolean

  /** How execution info and EXPLAIN show it. */
  def describe: String
}

private[query] object ChangedSince {
  /** Rows last written by batch `batchId` or a later one. */
  final case class Batch(batchId: Long) extends ChangedSince {
    require(batchId >= 0, s"a batch id is >= 0, got $batchId")
    def accepts(written: WriteStamp): Boolean = written.knownBatch.exists(_ >= batchId)
    def describe: String = s"changed since batch $batchId"
  }

  /** Rows last written by a batch whose timestamp is `ms` (milliseconds since the epoch) or later. */
  final case class TimeMs(ms: Long) extends ChangedSince {
    require(ms >= 0, s"a batch time is >= 0 ms, got $ms")
    def accepts(written: WriteStamp): Boolean = written.knownTimeMs.exists(_ >= ms)
    def describe: String = s"changed since $ms ms"
  }
}
