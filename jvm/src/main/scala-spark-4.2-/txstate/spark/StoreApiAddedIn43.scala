package txstate.spark

import org.apache.spark.sql.types.StructType

import txstate.compat.StateApi.KeyStateEncoderSpec

/**
 * The StateStore member Spark 4.3 added, declared for 4.2 and older, which lack it, so the shared
 * TxStateStore implements it with `override` on every line (docs/ARCHITECTURE.md, "Spark lines").
 * Those lines never call it; our tests, queries and benchmarks do.
 */
trait StoreApiAddedIn43 {
  def registerColFamily(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit
}
