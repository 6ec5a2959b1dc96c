package txstate.spark

import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types.StructType

/**
 * The partition Spark's hash-partitioned shuffle sends a state key to: stateful operators keep a
 * key's state in the partition their shuffle placed its rows in, which is Spark's own
 * `HashPartitioning` of the shuffle's columns. Those are the key's first `hashedColumns` columns
 * (all of them for most stores, fewer where the store key extends the shuffle key). With no hashed
 * column the operator runs as one task (a global aggregation), in partition 0.
 *
 * Interactive queries use it to route a key to its owner; migration uses it to rescale.
 */
final class KeyPlacement(keySchema: StructType, hashedColumns: Int, numPartitions: Int) {
  require(hashedColumns >= 0 && hashedColumns <= keySchema.length,
    s"hashedColumns $hashedColumns is outside 0..${keySchema.length}")
  require(numPartitions > 0, s"numPartitions must be positive, got $numPartitions")

  private val partitionId: Option[Expression] =
    if (hashedColumns == 0) None
    else {
      val columns = keySchema.fields.toSeq.take(hashedColumns).zipWithIndex.map { case (f, i) =>
        BoundReference(i, f.dataType, f.nullable)
      }
      Some(HashPartitioning(columns, numPartitions).partitionIdExpression)
    }

  def partitionOf(key: UnsafeRow): Int = partitionId.fold(0)(_.eval(key).asInstanceOf[Int])
}
