package txstate.conformance

/**
 * Tests of Spark 4.1's tests jar that assert another provider's internals (4.2 moved them out of
 * the shared suite into its HDFS and RocksDB suites), each with why.
 */
object LineExclusions {
  val byName: Map[String, String] = Map(
    "overwrite state file without overwriting checksum file" ->
      ("counts the checksum side files Spark's checksumming file manager writes next to HDFS and RocksDB " +
        "files; txstate's changelogs and snapshot manifests carry a CRC in every frame instead"),
    "checksum files are also cleaned up during maintenance" ->
      "counts the same checksum side files, which txstate's checkpoint files do not need",
    "Load spark 4.0 golden checkpoint written without checksum" ->
      "loads Spark 4.0's HDFS and RocksDB golden checkpoints, and throws for any other provider class")

  /** Shared exclusions whose test this line's suite does not have: none. */
  val absent: Set[String] = Set.empty
}
