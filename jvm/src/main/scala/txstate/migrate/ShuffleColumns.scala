package txstate.migrate

import txstate.spark.KeyPlacement

/**
 * How many leading key columns of a store Spark's shuffle hashes to place that store's rows
 * (`KeyPlacement.hashedColumns`). Rescaling re-places every key with exactly that hash, so only
 * operators whose placement is known can be rescaled; any other is refused.
 */
object ShuffleColumns {
  /** The hashed column count, or why it cannot be known. */
  def of(store: StoreToCopy): Either[String, Int] =
    KeyPlacement.hashedColumns(store.operatorName, store.storeName, store.keySchema.length, store.numColsPrefixKey)
      .left.map(why => s"$why to this tool, so it cannot re-place its keys")
}
