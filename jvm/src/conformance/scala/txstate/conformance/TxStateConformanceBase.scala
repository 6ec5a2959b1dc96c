package txstate.conformance

import java.util.UUID

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.execution.streaming.state.StateStoreTestsHelper.{dataToKeyRow, put, rowPairsToDataSet}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.scalatest.BeforeAndAfter

import txstate.checkpoint.StoreCheckpoint
import txstate.compat.StateApi.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec}
import txstate.spark.TxStateStoreProvider

/**
 * Spark's state store conformance suite (`StateStoreSuiteBase`, from spark-sql's tests jar) run
 * against our provider: every test Spark's authors wrote for a provider's contract, less the ones
 * named in [[ConformanceExclusions]] (reported as ignored, each with its reason in that file).
 * What every line shares is here; `TxStateStoreConformanceSuite` (per line) makes providers the way
 * that line's suite asks for them.
 *
 * Providers are built as Spark's executors build them (constructor, then `init`), on a fresh
 * checkpoint directory unless the test names the store.
 *
 * The tests named "txstate: ..." are ours: where an exclusion drops a Spark test for asserting
 * another provider's internals, one of them checks the rest of that test's contract, so the
 * exclusion hides no bug of ours; one more checks the exclusion list itself.
 */
abstract class TxStateConformanceBase extends StateStoreSuiteBase[TxStateStoreProvider] with BeforeAndAfter {

  // As Spark's own provider suites: every test starts and ends with no store loaded and no
  // maintenance thread running (the SPARK-48997 test counts on a fresh maintenance interval).
  before(StateStore.stop())
  after(StateStore.stop())

  /**
   * SparkFunSuite registers a test named here as ignored. It matches whole names, and each
   * `testWithAllCodec` test registers 16 (see [[ConformanceExclusions.expand]]), so a base name
   * stands for all of its variants. Called while the base class registers its tests.
   */
  override def excluded: Seq[String] = ConformanceExclusions.expand(codecsInShortName)

  /** The Hadoop configuration each provider was made with, for readers of the same store. */
  private val hadoopConfs = new java.util.WeakHashMap[TxStateStoreProvider, Configuration]()

  /** Spark's executors hand every provider its query's run id under this key (StreamExecution.RUN_ID_KEY). */
  private def runIdKey = "sql.streaming.runId"

  protected def defaultSQLConf: SQLConf =
    getDefaultSQLConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.defaultValue.get,
      SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY.defaultValue.get)

  protected def newProvider(
      storeId: StateStoreId = StateStoreId(StateStoreTestsHelper.newDir(), Random.nextInt(), 0),
      keySchema: StructType = this.keySchema,
      keyStateEncoderSpec: KeyStateEncoderSpec = null,
      useColumnFamilies: Boolean = false,
      sqlConf: SQLConf = defaultSQLConf,
      hadoopConf: Configuration = new Configuration()): TxStateStoreProvider = {
    if (hadoopConf.get(runIdKey) == null) hadoopConf.set(runIdKey, UUID.randomUUID().toString)
    val provider = new TxStateStoreProvider
    provider.init(storeId, keySchema, valueSchema,
      Option(keyStateEncoderSpec).getOrElse(NoPrefixKeyStateEncoderSpec(keySchema)), useColumnFamilies,
      new StateStoreConf(sqlConf), hadoopConf, false, None)
    hadoopConfs.synchronized(hadoopConfs.put(provider, hadoopConf))
    provider
  }

  /**
   * The data of `version` (the newest committed one when negative), read the way a restarted
   * query would: by a new provider on the same store, never through `provider` itself.
   */
  protected def readData(provider: TxStateStoreProvider, version: Int, useColumnFamilies: Boolean): Set[((String, Int), Int)] = {
    val hadoopConf = hadoopConfs.synchronized(Option(hadoopConfs.get(provider))).getOrElse(new Configuration())
    val readerConf = new Configuration(hadoopConf)
    readerConf.unset(runIdKey) // a run of its own, as after a restart
    val reader = newProvider(provider.stateStoreId, useColumnFamilies = useColumnFamilies, hadoopConf = readerConf)
    try {
      val store = reader.getReadStore(if (version < 0) newestCommittedVersion(provider.stateStoreId, hadoopConf)
        else version.toLong)
      try store.iterator().map(StateStoreTestsHelper.rowPairToDataPair).toSet
      finally store.abort()
    } finally reader.close()
  }

  /** The newest version with a changelog in the store's checkpoint directory; 0 (empty) when none. */
  private def newestCommittedVersion(storeId: StateStoreId, hadoopConf: Configuration): Long = {
    val checkpoint = new StoreCheckpoint(storeId.storeCheckpointLocation(), hadoopConf)
    try checkpoint.changelogs().map(_.version).reduceOption(_ max _).getOrElse(0L)
    finally checkpoint.close()
  }

  /** Spark's defaults (and whatever the running test set with withSQLConf), with the given two. */
  def getDefaultSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf = {
    val conf = SQLConf.get.clone()
    conf.setConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT, minDeltasForSnapshot)
    conf.setConf(SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY, numOfVersToRetainInMemory)
    conf
  }

  // What SPARK-38320 checks, without keying the expected view on the store's class name: each
  // iterator is one consistent view, either the batch as it was when the iterator was made or as
  // it is when the iterator is read, and every iterator of the store takes the same one.
  test("txstate: an iterator shows the batch as it was when made, or as it is when read, never a mix") {
    tryWithProviderResource(newStoreProvider()) { provider =>
      val first = provider.getStore(0)
      put(first, "a", 1, 1)
      put(first, "b", 2, 2)
      assert(first.commit() === 1)

      val store = provider.getStore(1)
      try {
        val early = store.iterator()
        put(store, "a", 1, 10) // overwrite
        store.remove(dataToKeyRow("b", 2)) // delete
        put(store, "c", 3, 3) // insert
        val middle = store.iterator()
        put(store, "c", 3, 30)
        put(store, "d", 4, 4)

        val atEarly = Set(("a", 1) -> 1, ("b", 2) -> 2)
        val atMiddle = Set(("a", 1) -> 10, ("c", 3) -> 3)
        val atEnd = Set(("a", 1) -> 10, ("c", 3) -> 30, ("d", 4) -> 4)
        val (seenEarly, seenMiddle) = (rowPairsToDataSet(early), rowPairsToDataSet(middle))
        val asMade = seenEarly == atEarly && seenMiddle == atMiddle
        val asRead = seenEarly == atEnd && seenMiddle == atEnd
        assert(asMade || asRead, s"iterator made before the writes saw $seenEarly, one made between them saw " +
          s"$seenMiddle; as made they would be $atEarly and $atMiddle, as read both $atEnd")
        assert(rowPairsToDataSet(store.iterator()) === atEnd)
      } finally store.abort()
    }
  }

  test("txstate: every conformance exclusion names tests of this suite, and excludes every variant of them") {
    val (excludedNames, runNames) = testNames.toSeq.partition(_.endsWith(ConformanceExclusions.ignoredSuffix))
    val stale = ConformanceExclusions.byName.keys.filterNot(base =>
      excludedNames.exists(n => ConformanceExclusions.isVariantOf(n.stripSuffix(ConformanceExclusions.ignoredSuffix), base)))
    assert(stale.isEmpty, s"exclusions that name no test of this suite: ${stale.mkString("; ")}")
    val missed = runNames.filter(n => ConformanceExclusions.byName.keys.exists(ConformanceExclusions.isVariantOf(n, _)))
    assert(missed.isEmpty, s"variants of excluded tests that still run: ${missed.mkString("; ")}")
  }
}
