package txstate.query

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

import txstate.spark.KeyPlacement

/**
 * Which partition holds a key, hashing all of its columns (`KeyPlacement`). Stores keyed by more
 * than the shuffle's columns (a join's key-with-index store, session windows) are not placed that
 * way: callers treat the owner as a first guess and ask every partition when it does not hold the key.
 */
private[query] object KeyOwners {
  def owner(key: UnsafeRow, keySchema: StructType, numPartitions: Int): Int =
    new KeyPlacement(keySchema, keySchema.length, numPartitions).partitionOf(key)
}
