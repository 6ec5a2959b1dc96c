package txstate.conformance

/**
 * Spark 4.3.0's tests jar is not on Maven Central: this line runs 4.2.0's against the 4.3.0
 * runtime. The tests of it that cannot run there, each with why.
 */
object LineExclusions {
  val byName: Map[String, String] = Map(
    // Cannot link against Spark 4.3.0: ScalaTest aborts the whole suite on a LinkageError.
    "StateStore.get" ->
      "4.2.0 tests jar calls StateStore.removeFromLoadedProvidersAndClose(id, Option), which 4.3.0 no longer has",
    "SPARK-34270: StateStoreMetrics.combine should not override individual metrics" ->
      "4.2.0 tests jar calls new StateStoreCustomSizeMetric(String, String); 4.3.0's constructor takes a third argument",
    "SPARK-35763: StateStoreCustomMetric withNewDesc and createSQLMetric" ->
      "4.2.0 tests jar calls new StateStoreCustomSizeMetric(String, String); 4.3.0's constructor takes a third argument",
    // Not about our provider: it runs Spark's HDFS provider (a 4.2.0 subclass of it), and fails for it too on 4.3.0.
    "SPARK-48997: maintenance threads with exceptions unload only themselves" ->
      "tests the HDFS provider's subclass from the 4.2.0 jar, not ours, and fails for it on 4.3.0 as well (stays loaded)")

  /** Shared exclusions whose test this line's suite does not have: none. */
  val absent: Set[String] = Set.empty
}
