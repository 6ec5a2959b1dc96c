package txstate.conformance

import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkException
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.execution.streaming.state.StateStoreTestsHelper.put
import org.apache.spark.sql.types.StructType

import txstate.spark.TxStateStoreProvider

/** Spark 4.x's conformance suite against our provider: its providers as 4.x's suite asks for them. */
class TxStateStoreConformanceSuite extends TxStateConformanceBase {
  def newStoreProvider(): TxStateStoreProvider = newProvider()

  def newStoreProvider(storeId: StateStoreId): TxStateStoreProvider = newProvider(storeId)

  def newStoreProvider(storeId: StateStoreId, useColumnFamilies: Boolean): TxStateStoreProvider =
    newProvider(storeId, useColumnFamilies = useColumnFamilies)

  def newStoreProvider(storeId: StateStoreId, conf: Configuration): TxStateStoreProvider =
    newProvider(storeId, hadoopConf = conf)

  def newStoreProvider(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): TxStateStoreProvider =
    newProvider(sqlConf = getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory))

  def newStoreProvider(keySchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean): TxStateStoreProvider =
    newProvider(keySchema = keySchema, keyStateEncoderSpec = keyStateEncoderSpec,
      useColumnFamilies = useColumnFamilies)

  def newStoreProvider(useColumnFamilies: Boolean): TxStateStoreProvider =
    newProvider(useColumnFamilies = useColumnFamilies)

  def newStoreProviderWithClonedConf(storeId: StateStoreId): TxStateStoreProvider =
    newProvider(storeId, sqlConf = defaultSQLConf) // the running test's SQLConf, cloned

  def newStoreProviderNoInit(): TxStateStoreProvider = new TxStateStoreProvider

  def getLatestData(storeProvider: TxStateStoreProvider, useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    readData(storeProvider, -1, useColumnFamilies)

  def getData(provider: TxStateStoreProvider, version: Int, useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    readData(provider, version, useColumnFamilies)

  // What SPARK-18342 checks, without requiring the HDFS store's name in the message: a commit whose
  // checkpoint file cannot be renamed into place fails with Spark's error for it.
  test("txstate: a commit fails with CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT when the checkpoint rename fails") {
    val scheme = RenameReturnsFalseFileSystem.scheme
    val conf = new Configuration()
    conf.set(s"fs.$scheme.impl", classOf[RenameReturnsFalseFileSystem].getName)
    val storeId = StateStoreId(s"$scheme://${StateStoreTestsHelper.newDir()}", operatorId = 0, partitionId = 0)
    tryWithProviderResource(newStoreProvider(storeId, conf)) { provider =>
      val store = provider.getStore(0)
      try {
        put(store, "a", 0, 0)
        val e = intercept[SparkException](store.commit())
        assert(e.getCondition === "CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT")
        Seq("Error writing state store files", "operatorId=0", "partitionId=0").foreach(text =>
          assert(e.getMessage.contains(text), s"'$text' not in: ${e.getMessage}"))
        val causes = Iterator.iterate(e.getCause)(_.getCause).takeWhile(_ != null).toSeq
        assert(causes.exists(c => Option(c.getMessage).exists(_.toLowerCase.contains("rename"))),
          s"no cause says the rename failed: ${causes.mkString("; ")}")
      } finally if (!store.hasCommitted) store.abort()
    }
  }
}
