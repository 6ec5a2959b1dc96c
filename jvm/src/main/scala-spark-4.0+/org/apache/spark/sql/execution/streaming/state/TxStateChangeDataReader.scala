package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

/**
 * Adapts txstate's decoded changelog records to the iterator type Spark's state data source
 * (`readChangeFeed`) consumes. In Spark's package only because that iterator type is Spark-private.
 *
 * @param changes (record type, key, value or null for deletes, batch id) in commit order
 */
final class TxStateChangeDataReader(changes: Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)], onClose: () => Unit)
    extends NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] {

  override protected def getNext(): (RecordType.Value, UnsafeRow, UnsafeRow, Long) =
    if (changes.hasNext) changes.next()
    else {
      finished = true
      null
    }

  override protected def close(): Unit = onClose()
}

