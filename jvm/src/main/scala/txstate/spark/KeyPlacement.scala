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

object KeyPlacement {
  private val wholeKey = Set("stateStoreSave", "dedupe", "dedupeWithinWatermark", "flatMapGroupsWithState",
    "applyInPandasWithState")

  /**
   * How many leading key columns Spark's shuffle hashes to place a store's rows, by the operator
   * name Spark records in its operator metadata; Left says why that is not known.
   */
  def hashedColumns(operatorName: String, storeName: String, keyColumns: Int, numColsPrefixKey: Int)
      : Either[String, Int] = operatorName match {
    // Aggregations (global ones have no key column: one task, partition 0), deduplication and
    // the flatMapGroupsWithState family shuffle on exactly the columns of their state key.
    case name if wholeKey(name) => Right(keyColumns)
    // Session windows key their state by (grouping columns, session start) and shuffle on the
    // grouping columns, the key prefix Spark records as numColsPrefixKey.
    case "sessionWindowStateStoreSaveExec" if numColsPrefixKey > 0 => Right(numColsPrefixKey)
    // A stream-stream join shuffles each side on its join keys: the whole key of the
    // keyToNumValues stores, the key without its trailing index of the keyWithIndexToValue ones.
    case "symmetricHashJoin" if storeName.endsWith("-keyToNumValues") => Right(keyColumns)
    case "symmetricHashJoin" if storeName.endsWith("-keyWithIndexToValue") && keyColumns > 1 => Right(keyColumns - 1)
    case name =>
      Left(s"how Spark's shuffle places the rows of operator '$name', store '$storeName' is not known")
  }
}
