package txstate.conformance

/** Spark 3.5 runs its own release's tests jar: nothing is excluded for this line alone. */
object LineExclusions {
  val byName: Map[String, String] = Map.empty

  /** Shared exclusions whose test 3.5's StateStoreSuiteBase does not have (it came later). */
  val absent: Set[String] = Set("SPARK-18342: commit fails when rename fails")
}
