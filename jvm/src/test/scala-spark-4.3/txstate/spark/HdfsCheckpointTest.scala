package txstate.spark

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.dfs.MiniDfs

/**
 * The provider with its checkpoint on a real HDFS (a NameNode and a DataNode on loopback): commit,
 * reload from the checkpoint alone, restart on a kept local directory, and roll back a re-run batch.
 * 4.3 line only (jvm/src/test/scala-spark-4.3): the mini cluster is a test dependency of that line.
 */
final class HdfsCheckpointTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = StructType(Seq(StructField("name", StringType)))
  private val valueSchema = StructType(Seq(StructField("count", LongType)))
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)
  private val every2 = Seq(TxStateConf.prefix + "snapshotInterval" -> "2")

  private var dfs: Option[MiniDfs] = None
  private var roots = 0

  override def beforeAll(): Unit = {
    super.beforeAll()
    dfs = Some(MiniDfs.start(newTempDir("dfs")))
  }

  override def afterAll(): Unit =
    try dfs.foreach(_.close())
    finally super.afterAll()

  private def cluster: MiniDfs = dfs.getOrElse(fail("the mini DFS cluster did not start"))

  /** A fresh checkpoint root on HDFS. */
  private def hdfsRoot(): String = {
    roots += 1
    s"${cluster.uri}/checkpoints/root-$roots"
  }

  private def contents(store: ReadStateStore): Map[String, Long] =
    pairs(store.iterator(default), keySchema, valueSchema).map { case (k, v) =>
      k(0).asInstanceOf[String] -> v(0).asInstanceOf[Long]
    }.toMap

  private def custom(store: StateStore): Map[String, Long] =
    store.metrics.customMetrics.map { case (m, v) => m.name -> v }

  /** Commits version v+1 on top of v: key k<v> = v, and "last" = v. */
  private def commitVersion(p: TxStateStoreProvider, v: Int): Unit = {
    val s = p.getStore(v)
    s.put(key(s"k$v"), value(v), default)
    s.put(key("last"), value(v), default)
    assert(s.commit() == v + 1)
  }

  private def expected(versions: Int): Map[String, Long] =
    if (versions == 0) Map.empty
    else (0 until versions).map(v => s"k$v" -> v.toLong).toMap + ("last" -> (versions - 1).toLong)

  /** The names of the files under `root` on the cluster, recursively. */
  private def filesOnHdfs(root: String): Seq[String] = {
    val fs = FileSystem.get(new Path(root).toUri, cluster.conf)
    val it = fs.listFiles(new Path(root), true)
    Iterator.continually(it).takeWhile(_.hasNext).map(_.next().getPath.getName).toSeq
  }

  /** The length of the changelog of `version` under `root` (checkpoint format v1 names it `<version>.txlog`). */
  private def changelogLength(root: String, version: Long): Long = {
    val fs = FileSystem.get(new Path(root).toUri, cluster.conf)
    val it = fs.listFiles(new Path(root), true)
    Iterator.continually(it).takeWhile(_.hasNext).map(_.next())
      .find(_.getPath.getName == s"$version.txlog").map(_.getLen)
      .getOrElse(fail(s"no changelog of version $version under $root: ${filesOnHdfs(root)}"))
  }

  /**
   * The cluster's counters once they have stopped moving. Hadoop counts a call after its reply has
   * gone out (a NameNode handler, a DataNode transfer thread), so a caller that has its answer can
   * still see the count before it: a sample is taken as final when it matches the next three.
   */
  private def settledCounters(): Map[String, Long] = {
    val samples = Iterator.continually { val now = cluster.counters; Thread.sleep(200); now }
    samples.sliding(4).collectFirst { case window if window.distinct.size == 1 => window.head }.get
  }

  /**
   * The settled counters once `moved` holds for them, waiting up to 10 s for it: on a loaded
   * machine the count of work that has already returned may come late.
   */
  private def countersOnce(moved: Map[String, Long] => Boolean): Map[String, Long] = {
    val deadline = System.nanoTime() + 10L * 1000 * 1000 * 1000
    Iterator.continually(settledCounters()).find(c => moved(c) || System.nanoTime() > deadline).get
  }

  private def dataNodeBytesRead(counters: Map[String, Long]): Long =
    counters.getOrElse("dn.BytesRead", fail(s"no DataNode byte counter: $counters"))

  test("a batch on the version it just committed reads the changelog's header only, not the changelog") {
    val root = hdfsRoot()
    withProvider(newProvider(root, keySchema, valueSchema)) { p =>
      val s0 = p.getStore(0)
      (0 until 40000).foreach(i => s0.put(key(s"key-$i-${i.toLong * 2654435761L}"), value(i.toLong), default))
      assert(s0.commit() == 1)
      val length = changelogLength(root, 1)
      assert(length > (256L << 10), s"the changelog must be far larger than a DataNode packet (64 KiB): $length bytes")
      val before = dataNodeBytesRead(settledCounters())
      // Checkpoint format v1: reusing the local database checks version 1's id in its changelog's header.
      val s1 = p.getStore(1)
      val read = dataNodeBytesRead(countersOnce(c => dataNodeBytesRead(c) > before)) - before
      assert(custom(s1)("txstateRebuilds") == 0 && custom(s1)("txstateChangelogsReplayed") == 0, custom(s1))
      s1.abort()
      assert(read > 0, "the header must have been read from the DataNode")
      assert(read <= (8L << 10), s"the DataNode sent $read bytes of a $length-byte changelog to check its header")
    }
  }

  /** The NameNode calls a cleanup round makes (it lists, checks and opens), from `before` to now. */
  private def readCallsSince(before: Map[String, Long], now: Map[String, Long]): Map[String, Long] =
    Seq("GetListing", "GetFileInfo", "GetBlockLocations").map(m => m -> (now.getOrElse(s"rpc.$m", 0L) -
      before.getOrElse(s"rpc.$m", 0L))).toMap

  test("a cleanup round with nothing committed or uploaded since the last one sends hdfs:// no request") {
    val root = hdfsRoot()
    withProvider(newProvider(root, keySchema, valueSchema, settings = every2)) { p =>
      (0 until 3).foreach(commitVersion(p, _))
      p.doMaintenance()
      val idle = settledCounters()
      p.doCleanupMaintenance()
      val idleCalls = readCallsSince(idle, settledCounters())
      assert(idleCalls.values.sum == 0, s"an idle cleanup round asked the NameNode: $idleCalls")
      commitVersion(p, 3)
      val afterCommit = settledCounters()
      p.doCleanupMaintenance()
      val calls = readCallsSince(afterCommit, countersOnce(readCallsSince(afterCommit, _)("GetListing") > 0))
      assert(calls("GetListing") > 0, s"the round after a commit must look at the checkpoint again: $calls")
    }
  }

  test("versions committed to hdfs:// are rebuilt by a new provider from a snapshot and the changelogs after it") {
    val root = hdfsRoot()
    withProvider(newProvider(root, keySchema, valueSchema, settings = every2)) { p =>
      (0 until 5).foreach { v =>
        commitVersion(p, v)
        p.doSnapshotMaintenance()
      }
    }
    val names = filesOnHdfs(root)
    assert(names.count(_.endsWith(".txlog")) == 5, names)
    withProvider(newProvider(root, keySchema, valueSchema, settings = every2)) { p =>
      val s5 = p.getStore(5)
      assert(contents(s5) == expected(5))
      assert(s5.metrics.numKeys == 6)
      val metrics = custom(s5)
      assert(metrics("txstateRebuilds") == 1, metrics)
      assert(metrics("txstateChangelogsReplayed") == 1,
        s"version 4's snapshot from HDFS, then version 5's changelog: $metrics")
      s5.abort()
      val s2 = p.getStore(2)
      assert(contents(s2) == expected(2))
      s2.abort()
    }
  }

  test("a restart on the kept local directory reuses it and goes on committing to hdfs://") {
    val root = hdfsRoot()
    val local = newTempDir("local")
    withProvider(newProvider(root, keySchema, valueSchema, localDir = local)) { p =>
      (0 until 3).foreach(commitVersion(p, _))
    }
    withProvider(newProvider(root, keySchema, valueSchema, localDir = local)) { p =>
      val s3 = p.getStore(3)
      val metrics = custom(s3)
      assert(metrics("txstateRebuilds") == 0 && metrics("txstateChangelogsReplayed") == 0, metrics)
      assert(contents(s3) == expected(3))
      s3.abort()
      commitVersion(p, 3)
    }
    withProvider(newProvider(root, keySchema, valueSchema)) { p =>
      val s4 = p.getStore(4)
      assert(contents(s4) == expected(4), "a fresh provider reads the version the restarted one committed")
      s4.abort()
    }
  }

  test("a re-run of a committed batch rolls back, and the re-run is what hdfs:// keeps") {
    val root = hdfsRoot()
    withProvider(newProvider(root, keySchema, valueSchema)) { p =>
      (0 until 3).foreach(commitVersion(p, _))
      // Spark re-runs batch 2 after a failure: version 2 is loaded again (version 3 rolled back).
      val rerun = p.getStore(2)
      assert(custom(rerun)("txstateRollbacks") == 1, custom(rerun))
      assert(contents(rerun) == expected(2))
      rerun.put(key("k2-rerun"), value(2), default)
      rerun.put(key("last"), value(2), default)
      assert(rerun.commit() == 3)
    }
    val rerun = expected(2) + ("k2-rerun" -> 2L) + ("last" -> 2L)
    withProvider(newProvider(root, keySchema, valueSchema)) { p =>
      val s3 = p.getStore(3)
      assert(contents(s3) == rerun)
      s3.abort()
    }
  }
}
