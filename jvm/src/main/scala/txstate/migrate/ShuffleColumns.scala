package txstate.migrate

/**
 * How many leading key columns of a store Spark's shuffle hashes to place that store's rows, per
 * operator (by the name Spark records in its operator metadata). Rescaling re-places every key
 * with exactly that hash, so only operators listed here can be rescaled; any other is refused.
 */
object ShuffleColumns {
  private val wholeKey = Set("stateStoreSave", "dedupe", "dedupeWithinWatermark", "flatMapGroupsWithState",
    "applyInPandasWithState")

  /** The hashed column count, or why it cannot be known. */
  def of(store: StoreToCopy): Either[String, Int] = {
    val keyColumns = store.keySchema.length
    store.operatorName match {
      // Aggregations (global ones have no key column: one task, partition 0), deduplication and
      // the flatMapGroupsWithState family shuffle on exactly the columns of their state key.
      case name if wholeKey(name) => Right(keyColumns)
      // Session windows key their state by (grouping columns, session start) and shuffle on the
      // grouping columns, the key prefix Spark records as numColsPrefixKey.
      case "sessionWindowStateStoreSaveExec" if store.numColsPrefixKey > 0 => Right(store.numColsPrefixKey)
      // A stream-stream join shuffles each side on its join keys: the whole key of the
      // keyToNumValues stores, the key without its trailing index of the keyWithIndexToValue ones.
      case "symmetricHashJoin" if store.storeName.endsWith("-keyToNumValues") => Right(keyColumns)
      case "symmetricHashJoin" if store.storeName.endsWith("-keyWithIndexToValue") && keyColumns > 1 =>
        Right(keyColumns - 1)
      case name =>
        Left(s"how Spark's shuffle places the rows of operator '$name', store '${store.storeName}' is not known " +
          "to this tool, so it cannot re-place its keys")
    }
  }
}
