package txstate.store

import txstate.engine.{TimeToLive, WriteStamp}

/**
 * What a batch's writes are stamped with and whether TTL expires rows in it. The adapter reads
 * both from Spark (the batch id and the offset log's batch timestamp, the same on every retry).
 */
final case class BatchClock(stamp: WriteStamp, ttl: Option[TimeToLive])

object BatchClock {
  /** No known batch time and no TTL: migrations, tests and batches outside a streaming query. */
  val untimed: BatchClock = BatchClock(WriteStamp.unknown, None)
}
