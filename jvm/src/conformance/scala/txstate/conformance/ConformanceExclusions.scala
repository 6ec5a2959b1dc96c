package txstate.conformance

import org.apache.spark.io.{LZ4CompressionCodec, LZFCompressionCodec, SnappyCompressionCodec, ZStdCompressionCodec}

/**
 * The tests of Spark's conformance suite that TxStateStoreConformanceSuite does not run: test
 * name -> one-line reason. Everything else in the suite must pass; a failure is our bug until
 * proven otherwise, and is fixed, not listed here.
 *
 * A `testWithAllCodec` test is listed by its base name: it stands for the tests Spark registers
 * for it ("<name> - with codec <codec> - with colFamiliesEnabled=<true|false>" on 4.x, 16 of them;
 * "<name> - with codec <codec>" on 3.5).
 *
 * What only one Spark line excludes (tests its tests jar cannot run there) is in that line's
 * `LineExclusions`, in jvm/src/conformance/scala-spark-<line>.
 */
object ConformanceExclusions {
  val byName: Map[String, String] = LineExclusions.byName ++ shared.filter { case (name, _) => !LineExclusions.absent(name) }

  private def shared: Map[String, String] = Map(
    // Assert another provider's internals. Our own tests at the end of TxStateStoreConformanceSuite
    // check the rest of what each of them asserts.
    "SPARK-38320 - state store iterator behavior differences" ->
      ("expects RocksDB's iterator view only of a class named *RocksDBStateStore*; of any other, HDFS's " +
        "ConcurrentHashMap quirks (an iterator made on an empty map stays empty, others see later writes)"),
    "SPARK-18342: commit fails when rename fails" ->
      "requires \"HDFSStateStore\" in the error message of every store whose class is not named *RocksDBStateStore*")

  /** How SparkFunSuite renames an excluded test when it registers it as ignored. */
  val ignoredSuffix = " (excluded)"

  /** `name` is `base` itself or one of the variants `testWithAllCodec` registers for it. */
  def isVariantOf(name: String, base: String): Boolean =
    name == base || name.startsWith(s"$base - with codec ")

  /**
   * Every listed name with its `testWithAllCodec` variants, in the form SparkFunSuite's `excluded`
   * matches (whole names). StateStoreCodecsTest names each of Spark's codecs twice: by its short name
   * (`codecShortNames`, its `codecsInShortName`) and by its class name (Spark's list of those is
   * private, so they are named here; the suite's own exclusion test fails if Spark adds a codec).
   */
  def expand(codecShortNames: Seq[String]): Seq[String] = {
    val codecClasses = Seq(classOf[LZ4CompressionCodec], classOf[LZFCompressionCodec], classOf[SnappyCompressionCodec],
      classOf[ZStdCompressionCodec]).map(_.getName)
    val codecs = codecShortNames ++ codecClasses
    // 4.x names each variant by codec and column families; 3.5 (no column families) by codec alone.
    byName.keys.toSeq.flatMap(base => base +: codecs.flatMap(codec => s"$base - with codec $codec" +:
      Seq(true, false).map(cf => s"$base - with codec $codec - with colFamiliesEnabled=$cf")))
  }
}
