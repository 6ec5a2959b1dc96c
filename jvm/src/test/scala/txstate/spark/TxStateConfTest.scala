package txstate.spark

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

final class TxStateConfTest extends AnyFunSuite with ProviderFixture {
  private val schema = StructType(Seq(StructField("k", StringType)))

  test("an unknown txstate setting is rejected at init with a message naming it") {
    val typo = TxStateConf.prefix + "blockCacheSizeMb" // the real one ends in MB
    val e = intercept[IllegalArgumentException] {
      newProvider(newCheckpointRoot(), schema, schema, settings = Seq(typo -> "64"))
    }
    assert(e.getMessage.contains(typo))
    assert(e.getMessage.contains("TXSTATE_INVALID_SETTING"))
    assert(e.getMessage.contains(TxStateConf.prefix + "blockCacheSizeMB"), "the message lists the known settings")
  }

  test("a malformed value is rejected with a message naming the setting and the value") {
    val setting = TxStateConf.prefix + "maxWriteBufferNumber"
    val e = intercept[IllegalArgumentException] {
      newProvider(newCheckpointRoot(), schema, schema, settings = Seq(setting -> "one"))
    }
    assert(e.getMessage.contains(setting) && e.getMessage.contains("'one'"))
    val tooSmall = intercept[IllegalArgumentException] {
      newProvider(newCheckpointRoot(), schema, schema, settings = Seq(setting -> "1"))
    }
    assert(tooSmall.getMessage.contains(">= 2"))
  }

  test("known settings are read into the engine options") {
    val conf = TxStateConf.from(storeConf(
      TxStateConf.prefix + "blockCacheSizeMB" -> "32",
      TxStateConf.prefix + "writeBufferSizeMB" -> " 4 ",
      TxStateConf.prefix + "maxWriteBufferNumber" -> "5"))
    assert(conf.store.engine.blockCacheBytes == (32L << 20))
    assert(conf.store.engine.writeBufferBytes == (4L << 20))
    assert(conf.store.engine.maxWriteBuffers == 5)
  }

  test("the hot-state cache budget is read per executor in MiB, 0 switching it off, and a bad value is refused") {
    assert(TxStateConf.from(storeConf()).hotCacheBytes == TxStateConf.defaultHotCacheBytes)
    assert(TxStateConf.from(storeConf(TxStateConf.prefix + "hotCacheSizeMB" -> "256")).hotCacheBytes == (256L << 20))
    assert(TxStateConf.from(storeConf(TxStateConf.prefix + "hotCacheSizeMB" -> "0")).hotCacheBytes == 0L)
    val setting = TxStateConf.prefix + "hotCacheSizeMB"
    val e = intercept[IllegalArgumentException](TxStateConf.from(storeConf(setting -> "-1")))
    assert(e.getMessage.contains(setting) && e.getMessage.contains("'-1'") && e.getMessage.contains(">= 0"))
  }

  test("the native memory budget is read per executor in MiB, 0 switching it off, and a bad value is refused") {
    val setting = TxStateConf.prefix + "maxNativeMemoryMB"
    assert(TxStateConf.from(storeConf()).nativeMemoryBytes == TxStateConf.defaultNativeMemoryBytes)
    assert(TxStateConf.from(storeConf(setting -> "1024")).nativeMemoryBytes == (1024L << 20))
    assert(TxStateConf.from(storeConf(setting -> "0")).nativeMemoryBytes == 0L)
    val e = intercept[IllegalArgumentException](TxStateConf.from(storeConf(setting -> "-1")))
    assert(e.getMessage.contains(setting) && e.getMessage.contains("'-1'") && e.getMessage.contains(">= 0"))
  }

  test("Spark's own state store settings are not mistaken for ours") {
    val conf = TxStateConf.from(storeConf("spark.sql.streaming.stateStore.minDeltasForSnapshot" -> "3"))
    assert(conf.localDir.isEmpty)
  }
}
