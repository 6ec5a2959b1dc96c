package txstate.conformance

/** Spark 4.2 runs its own release's tests jar: nothing is excluded for this line alone. */
object LineExclusions {
  val byName: Map[String, String] = Map.empty

  /** Shared exclusions whose test this line's suite does not have: none. */
  val absent: Set[String] = Set.empty
}
