package txstate.spark

import java.net.URI

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.RawLocalFileSystem
import org.apache.spark.{SparkException, SparkThrowable}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStoreId}
import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

/**
 * What Spark's provider contract (its StateStoreSuiteBase) expects beyond plain reads and writes:
 * its error classes, `multiGet`, its null-value wording, the `forceSnapshotCount` metric, and file
 * systems without `getScheme`. Each was a failure of txstate in Spark's own suite.
 */
final class SparkContractTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = new StructType().add("k", StringType)
  private val valueSchema = new StructType().add("v", LongType)
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)

  private def condition(e: Throwable): String = e match {
    case s: SparkThrowable => s.getCondition
    case other => fail(s"expected one of Spark's error classes, got $other")
  }

  test("a negative or missing version fails with Spark's CANNOT_LOAD_STATE_STORE error classes, naming the file") {
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema)) { p =>
      val negative = intercept[SparkException](p.getStore(-1))
      assert(condition(negative) == "CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION", negative.getMessage)
      val missing = intercept[SparkException](p.getStore(3))
      assert(condition(missing) == "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE", missing.getMessage)
      assert(missing.getMessage.contains("3.txlog"), missing.getMessage)
      assert(missing.getCause.getMessage.contains("TXSTATE_MISSING_CHANGELOG"), "our own message stays in the cause")
      val store = p.getStore(0) // a failed load leaves the provider usable
      store.put(key("a"), value(1L))
      assert(store.commit() == 1)
    }
  }

  test("multiGet answers every key in order: buffered writes, deletes, committed rows and absent keys") {
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema)) { p =>
      val s0 = p.getStore(0)
      Seq("a" -> 1L, "b" -> 2L, "c" -> 3L).foreach { case (k, v) => s0.put(key(k), value(v)) }
      s0.commit()
      val s1 = p.getStore(1)
      s1.put(key("b"), value(20L)) // buffered overwrite
      s1.remove(key("c"))          // buffered delete of a committed key
      s1.put(key("d"), value(4L))  // buffered new key
      val got = s1.multiGet(Array("a", "b", "c", "d", "e").map(key(_)), default)
        .map(r => Option(r).map(_.getLong(0))).toSeq
      assert(got == Seq(Some(1L), Some(20L), None, Some(4L), None))
      s1.abort()
    }
  }

  test("a null value is refused with Spark's wording, and a null key likewise") {
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema)) { p =>
      val s = p.getStore(0)
      val nullValue = intercept[IllegalArgumentException](s.put(key("a"), null, default))
      assert(nullValue.getMessage.contains("Cannot put a null value"), nullValue.getMessage)
      val nullKey = intercept[IllegalArgumentException](s.put(null, value(1L), default))
      assert(nullKey.getMessage.contains("Cannot put a null key"), nullKey.getMessage)
      s.abort()
    }
  }

  test("forceSnapshotCount counts a commit Spark forced to snapshot, and only that") {
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema)) { p =>
      def forced(store: org.apache.spark.sql.execution.streaming.state.StateStore): Long =
        store.metrics.customMetrics.collectFirst { case (m, v) if m.name == "forceSnapshotCount" => v }
          .getOrElse(fail("no forceSnapshotCount metric"))
      val plain = p.getStore(0)
      plain.put(key("a"), value(1L))
      plain.commit()
      assert(forced(plain) == 0L)
      val withSnapshot = p.getStore(1, None, forceSnapshotOnCommit = true, loadEmpty = false)
      withSnapshot.put(key("b"), value(2L))
      withSnapshot.commit()
      assert(forced(withSnapshot) == 1L)
    }
  }

  test("a checkpoint on a file system that does not implement getScheme works (SPARK-18342)") {
    val conf = new Configuration()
    conf.set(s"fs.${SchemelessLocalFileSystem.scheme}.impl", classOf[SchemelessLocalFileSystem].getName)
    conf.setBoolean(s"fs.${SchemelessLocalFileSystem.scheme}.impl.disable.cache", true)
    val root = s"${SchemelessLocalFileSystem.scheme}://${newTempPath("checkpoint").getAbsolutePath}"
    val provider = new TxStateStoreProvider
    provider.init(StateStoreId(root, 0L, 0), keySchema, valueSchema, NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = false, storeConf(TxStateConf.prefix + "localDir" -> newTempDir("local").getAbsolutePath),
      conf, useMultipleValuesPerKey = false, None)
    withProvider(provider) { p =>
      val s = p.getStore(0)
      s.put(key("a"), value(1L))
      assert(s.commit() == 1)
      assert(p.getStore(1).get(key("a"), default).getLong(0) == 1L)
    }
  }
}

/** A real local file system under its own scheme whose `getScheme` is not implemented, as in some Hadoop file systems. */
final class SchemelessLocalFileSystem extends RawLocalFileSystem {
  override def getScheme: String = throw new UnsupportedOperationException("getScheme is not implemented")
  override def getUri: URI = URI.create(s"${SchemelessLocalFileSystem.scheme}:///")
}

object SchemelessLocalFileSystem {
  val scheme = "noscheme"
}
