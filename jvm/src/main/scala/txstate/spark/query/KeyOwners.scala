package txstate.spark.query

import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types.StructType

/**
 * Which partition holds a key: Spark's stateful operators place state by hash partitioning of
 * their key columns (the shuffle's own partition function), so for most stores the key's hash
 * names the one partition to ask. Stores keyed by more than the shuffle's columns (a join's
 * key-with-index store, session windows) are not placed that way: callers treat the owner as a
 * first guess and ask every partition when it does not hold the key.
 */
private[query] object KeyOwners {
  def owner(key: UnsafeRow, keySchema: StructType, numPartitions: Int): Int = {
    val columns = keySchema.fields.toSeq.zipWithIndex.map { case (f, i) => BoundReference(i, f.dataType, f.nullable) }
    HashPartitioning(columns, numPartitions).partitionIdExpression.eval(key).asInstanceOf[Int]
  }
}
