package txstate.spark

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.StateApi

/** The provider through Spark's StateStore API: reads, writes, versions, read stores and metrics. */
final class TxStateStoreProviderTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = StructType(Seq(StructField("name", StringType), StructField("part", IntegerType)))
  private val valueSchema = StructType(Seq(StructField("count", LongType)))
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)

  private def provider(root: String = newCheckpointRoot(), localDir: java.io.File = newTempDir("local")) =
    newProvider(root, keySchema, valueSchema, localDir = localDir)

  private def countOf(store: TxStateStore, name: String, part: Int = 0): Option[Long] =
    Option(store.get(key(name, part), default)).map(_.getLong(0))

  private def contents(store: TxStateStore): Map[(String, Int), Long] =
    pairs(store.iterator(default), keySchema, valueSchema).map { case (k, v) =>
      (k(0).asInstanceOf[String], k(1).asInstanceOf[Int]) -> v(0).asInstanceOf[Long]
    }.toMap

  private def putCount(store: TxStateStore, name: String, count: Long, part: Int = 0): Unit =
    store.put(key(name, part), value(count), default)

  test("get, put, remove and iterator read the batch's own writes, and commit returns the next version") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      assert(s0.version == 0)
      assert(countOf(s0, "a").isEmpty)
      putCount(s0, "a", 1)
      putCount(s0, "b", 2)
      putCount(s0, "c", 3)
      putCount(s0, "a", 10) // overwrite
      s0.remove(key("b", 0), default)
      s0.remove(key("never", 0), default)
      assert(countOf(s0, "a").contains(10))
      assert(countOf(s0, "b").isEmpty)
      assert(s0.keyExists(key("c", 0), default))
      assert(!s0.keyExists(key("b", 0), default))
      assert(contents(s0) == Map(("a", 0) -> 10L, ("c", 0) -> 3L))
      assert(s0.metrics.numKeys == 2)
      assert(s0.commit() == 1)
      assert(s0.hasCommitted)

      val s1 = p.getStore(1)
      assert(contents(s1) == Map(("a", 0) -> 10L, ("c", 0) -> 3L))
      assert(s1.metrics.numKeys == 2)
      assert(s1.valuesIterator(key("a", 0), default).map(_.getLong(0)).toList == List(10L))
      s1.abort()
    }
  }

  test("abort drops the batch without reloading: the next getStore reuses the committed version") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      (1 to 5).foreach(i => putCount(s0, s"k$i", i))
      s0.commit()

      val s1 = p.getStore(1)
      putCount(s1, "new", 99)
      s1.remove(key("k1", 0), default)
      putCount(s1, "k2", -2)
      s1.abort()
      s1.abort() // Spark's completion listener may abort again

      val again = p.getStore(1)
      assert(contents(again) == (1 to 5).map(i => (s"k$i", 0) -> i.toLong).toMap)
      assert(again.metrics.numKeys == 5)
      val custom = again.metrics.customMetrics.map { case (m, v) => m.name -> v }
      assert(custom("txstateChangelogsReplayed") == 0 && custom("txstateRebuilds") == 0 && custom("txstateRollbacks") == 0)
      again.abort()
    }
  }

  test("metrics.numKeys is exact through overwrites, removals of absent keys and re-inserts") {
    withProvider(provider()) { p =>
      val s = p.getStore(0)
      (0 until 100).foreach(i => putCount(s, "k", i, part = i % 10)) // 10 distinct keys, 10 writes each
      assert(s.metrics.numKeys == 10)
      (0 until 20).foreach(i => s.remove(key("k", i), default))       // 10 present, 10 absent
      assert(s.metrics.numKeys == 0)
      (0 until 3).foreach(i => putCount(s, "k", 1, part = i))
      assert(s.metrics.numKeys == 3)
      s.commit()
      val s1 = p.getStore(1)
      assert(s1.metrics.numKeys == 3)
      putCount(s1, "k", 5, part = 0)
      putCount(s1, "other", 5)
      assert(s1.metrics.numKeys == 4)
      s1.commit()
      val s2 = p.getReadStore(2)
      assert(s2.asInstanceOf[StateStore].metrics.numKeys == 4)
      s2.release()
    }
  }

  test("a read store serves reads, refuses writes with a clear error, and releases the store") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      putCount(s0, "a", 1)
      s0.commit()

      val read = p.getReadStore(1)
      assert(countOf(read, "a").contains(1L))
      assert(contents(read) == Map(("a", 0) -> 1L))
      val e = intercept[UnsupportedOperationException](read.put(key("b", 0), value(2), default))
      assert(e.getMessage.contains("TXSTATE_READ_ONLY_STORE"))
      assert(e.getMessage.contains("put"))
      assert(e.getMessage.contains("upgradeReadStoreToWriteStore"))
      intercept[UnsupportedOperationException](read.remove(key("a", 0), default))
      intercept[UnsupportedOperationException](read.asInstanceOf[StateStore].commit())
      read.release()
      read.abort() // after release: a no-op

      // The store was released: a writer can open it at once and nothing was written.
      val s1 = p.getStore(1)
      assert(contents(s1) == Map(("a", 0) -> 1L))
      s1.abort()
    }
  }

  test("upgradeReadStoreToWriteStore keeps the read store readable and commits the writes") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      putCount(s0, "a", 1)
      putCount(s0, "b", 2)
      s0.commit()

      val read = p.getReadStore(1)
      assert(countOf(read, "a").contains(1L))
      val write = p.upgradeReadStoreToWriteStore(read, 1, None, false)
      putCount(write, "a", 11)
      putCount(write, "c", 3)
      // Aggregation keeps reading through the read store after the upgrade.
      assert(countOf(read, "b").contains(2L))
      assert(countOf(read, "a").isDefined)
      assert(countOf(write, "a").contains(11L))
      assert(write.commit() == 2)
      read.abort() // Spark's completion listener: must not undo the commit or throw

      val s2 = p.getStore(2)
      assert(contents(s2) == Map(("a", 0) -> 11L, ("b", 0) -> 2L, ("c", 0) -> 3L))
      s2.abort()
    }
  }

  test("upgrading a read store of another version releases it and opens the requested version") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      putCount(s0, "a", 1)
      s0.commit()
      val s1 = p.getStore(1)
      putCount(s1, "a", 2)
      s1.commit()

      val read = p.getReadStore(2)
      val write = p.upgradeReadStoreToWriteStore(read, 1, None, false)
      assert(write.version == 1)
      assert(countOf(write, "a").contains(1L))
      write.abort()
    }
  }

  test("every committed version stays loadable, and a new provider rebuilds them from the checkpoint") {
    val root = newCheckpointRoot()
    withProvider(provider(root)) { p =>
      (0 until 4).foreach { v =>
        val s = p.getStore(v)
        putCount(s, s"k$v", v)
        if (v == 2) s.remove(key("k0", 0), default)
        assert(s.commit() == v + 1)
      }
      val back = p.getStore(2) // a re-run batch: the local state goes back one or more versions
      assert(contents(back) == Map(("k0", 0) -> 0L, ("k1", 0) -> 1L))
      back.abort()
    }
    withProvider(provider(root)) { p =>
      val s4 = p.getStore(4)
      assert(contents(s4) == Map(("k1", 0) -> 1L, ("k2", 0) -> 2L, ("k3", 0) -> 3L))
      assert(s4.metrics.numKeys == 3)
      s4.abort()
      val s3 = p.getStore(3)
      assert(contents(s3) == Map(("k1", 0) -> 1L, ("k2", 0) -> 2L))
      s3.abort()
      val s1 = p.getReadStore(1)
      assert(contents(s1) == Map(("k0", 0) -> 0L))
      s1.release()
    }
  }

  test("a provider restarted on the same local directory reuses its database") {
    val root = newCheckpointRoot()
    val local = newTempDir("stable-local")
    withProvider(provider(root, local)) { p =>
      val s = p.getStore(0)
      putCount(s, "a", 1)
      s.commit()
    }
    withProvider(provider(root, local)) { p =>
      val s = p.getStore(1)
      assert(contents(s) == Map(("a", 0) -> 1L))
      val custom = s.metrics.customMetrics.map { case (m, v) => m.name -> v }
      assert(custom("txstateChangelogsReplayed") == 0, "nothing replayed: the local database already held version 1")
      s.abort()
    }
  }

  test("the stores of an executor share one native memory budget and report its use and limit executor-wide") {
    val providers = (0 until 3).map(i => provider(newCheckpointRoot(), newTempDir(s"budget-local-$i")))
    try {
      val metrics = providers.map { p =>
        val s = p.getStore(0)
        (0 until 200).foreach(k => putCount(s, s"k$k", k))
        s.commit()
        s.metrics.customMetrics.map { case (m, v) => m.name -> v }
      }
      val limits = metrics.map(_("txstateExecutorNativeMemoryLimitBytes")).distinct
      assert(limits == Seq(TxStateConf.defaultNativeMemoryBytes))
      assert(metrics.forall(_("txstateExecutorNativeMemoryBytes") > 0L), "the shared cache holds nothing of the stores' memtables")
      val executor = ExecutorNativeMemory.usedBytes
      assert(metrics.forall(m => m("txstateNativeMemoryBytes") <= executor + (1L << 20)),
        "a store reports more than the whole executor's use as its own")
    } finally providers.foreach(_.close())
  }

  test("under checkpoint format v2 a new provider loads the version by the id the commit reported") {
    val root = newCheckpointRoot()
    val v2 = Seq("spark.sql.streaming.stateStore.checkpointFormatVersion" -> "2")
    assume(StateApi.checkpointIdsEnabled(storeConf(v2: _*)), "this Spark line has no checkpoint format v2 (3.5)")
    val ids = withProvider(newProvider(root, keySchema, valueSchema, settings = v2)) { p =>
      val s0 = p.getStore(0)
      putCount(s0, "a", 1)
      s0.commit()
      val first = s0.getStateStoreCheckpointInfo()
      assert(first.batchVersion == 1 && first.stateStoreCkptId.isDefined && first.baseStateStoreCkptId.isEmpty)
      val s1 = p.getStore(1, first.stateStoreCkptId)
      putCount(s1, "b", 2)
      s1.commit()
      val second = s1.getStateStoreCheckpointInfo()
      assert(second.baseStateStoreCkptId == first.stateStoreCkptId)
      (first.stateStoreCkptId, second.stateStoreCkptId)
    }
    withProvider(newProvider(root, keySchema, valueSchema, settings = v2)) { p =>
      val s2 = p.getStore(2, ids._2)
      assert(contents(s2) == Map(("a", 0) -> 1L, ("b", 0) -> 2L))
      s2.abort()
      val s1 = p.getStore(1, ids._1)
      assert(contents(s1) == Map(("a", 0) -> 1L))
      s1.abort()
    }
  }

  test("a new provider rebuilds from an uploaded snapshot plus the changelogs after it") {
    val root = newCheckpointRoot()
    val every2 = Seq(TxStateConf.prefix + "snapshotInterval" -> "2")
    withProvider(newProvider(root, keySchema, valueSchema, settings = every2)) { p =>
      (0 until 5).foreach { v =>
        val s = p.getStore(v)
        putCount(s, s"k$v", v)
        if (v == 3) s.remove(key("k0", 0), default)
        s.commit()
        p.doSnapshotMaintenance()
      }
    }
    withProvider(newProvider(root, keySchema, valueSchema, settings = every2)) { p =>
      val s5 = p.getStore(5)
      assert(contents(s5) == (1 until 5).map(v => (s"k$v", 0) -> v.toLong).toMap)
      assert(s5.metrics.numKeys == 4)
      val custom = s5.metrics.customMetrics.map { case (m, v) => m.name -> v }
      assert(custom("txstateChangelogsReplayed") == 1, "version 4's snapshot plus version 5's changelog")
      s5.abort()
      val s3 = p.getStore(3)
      assert(contents(s3) == (0 until 3).map(v => (s"k$v", 0) -> v.toLong).toMap)
      s3.abort()
    }
  }

  test("writes after commit or abort fail with a message naming the store's state") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      s0.commit()
      val e = intercept[IllegalStateException](s0.put(key("a", 0), value(1), default))
      assert(e.getMessage.contains("TXSTATE_STORE_NOT_OPEN") && e.getMessage.contains("committed"))
      val s1 = p.getStore(1)
      s1.abort()
      val e2 = intercept[IllegalStateException](s1.get(key("a", 0), default))
      assert(e2.getMessage.contains("aborted"))
    }
  }

  test("a write store cannot be released, only committed or aborted") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      intercept[UnsupportedOperationException](s0.release())
      s0.abort()
    }
  }

  test("iterating while removing every key evicts them all") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      (0 until 200).foreach(i => putCount(s0, "k", i, part = i))
      s0.commit()
      val s1 = p.getStore(1)
      (200 until 300).foreach(i => putCount(s1, "k", i, part = i))
      val it = s1.iterator(default)
      var seen = 0
      it.foreach { pair => s1.remove(pair.key, default); seen += 1 }
      assert(seen == 300)
      assert(s1.metrics.numKeys == 0)
      s1.commit()
      val s2 = p.getStore(2)
      assert(contents(s2).isEmpty)
      s2.abort()
    }
  }

  test("getStore of a version the checkpoint lacks names the missing changelog and frees the store at once") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      putCount(s0, "a", 1)
      s0.commit()
      val e = intercept[Exception](p.getStore(7))
      assert(e.getMessage.contains("7.txlog"), e.getMessage)
      // Must not wait for a lock the failed getStore kept: a kept one is never released.
      val s1 = txstate.Background("getStore(1) after the failed one")(p.getStore(1)).result(30)
      assert(contents(s1) == Map(("a", 0) -> 1L))
      s1.abort()
    }
  }

  test("rows with no value columns and keys with null columns are stored and read back") {
    val emptyValue = StructType(Nil)
    withProvider(newProvider(newCheckpointRoot(), keySchema, emptyValue)) { p =>
      val none = new RowMaker(emptyValue)
      val s0 = p.getStore(0)
      s0.put(key("seen", 1), none(), default)
      s0.put(key(null, 2), none(), default)
      s0.commit()
      val s1 = p.getStore(1)
      assert(s1.get(key("seen", 1), default) != null)
      assert(s1.get(key("seen", 1), default).numFields == 0)
      assert(s1.keyExists(key(null, 2), default))
      assert(s1.get(key("other", 1), default) == null)
      assert(pairs(s1.iterator(default), keySchema, emptyValue).map(_._1).toSet == Set(Seq("seen", 1), Seq(null, 2)))
      s1.abort()
    }
  }

  test("a provider constructed only to read its metric names needs no init and closes cleanly") {
    val p = new TxStateStoreProvider
    assert(p.supportedCustomMetrics.map(_.name).contains("txstateCommitLatencyMs"))
    val e = intercept[IllegalStateException](p.getStore(0))
    assert(e.getMessage.contains("TXSTATE_NOT_INITIALIZED"))
    p.close()
  }

  test("the checkpoint info reports the loaded and the committed version") {
    withProvider(provider()) { p =>
      val s0 = p.getStore(0)
      putCount(s0, "a", 1)
      s0.commit()
      assert(s0.getStateStoreCheckpointInfo().batchVersion == 1)
      val s1 = p.getStore(1)
      assert(s1.getStateStoreCheckpointInfo().batchVersion == 1)
      s1.abort()
    }
  }
}
