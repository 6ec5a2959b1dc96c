package txstate.spark

/** StateStore members of Spark 4.2 and 4.3 that 4.1 lacks (docs/ARCHITECTURE.md, "Spark lines"). */
trait StoreApiOfOtherLines extends StoreApiAddedIn42 with StoreApiAddedIn43

/**
 * StateStoreProvider members of Spark 4.0, 4.2 and 4.3 that 4.1 lacks, declared here so the shared
 * TxStateStoreProvider implements them with `override` on every line. Spark 4.1 never calls them.
 */
trait ProviderApiOfOtherLines extends ProviderApiAddedIn42
