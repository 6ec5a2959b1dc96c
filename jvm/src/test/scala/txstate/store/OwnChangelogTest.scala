package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path, RawLocalFileSystem}
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.engine.KeyRange

/**
 * What a load reads when the instance committed the version itself (docs/ARCHITECTURE.md, "What a
 * load reads"), counted on real files: every checkpoint read of a local checkpoint goes through
 * Hadoop's raw local file system, whose per-thread statistics count the bytes read, and a load runs
 * on the calling thread.
 */
final class OwnChangelogTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)

  private def open(root: Path, local: File = newTempPath("local"), idsInFileNames: Boolean = false): StoreInstance =
    StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(),
      StoreOptions(idsInFileNames = idsInFileNames), "test store")

  private def commit(inst: StoreInstance, pairs: (String, String)*): Long = {
    val batch = inst.begin()
    pairs.foreach { case (k, v) => batch.put(b(k), b(v)) }
    batch.commit().version
  }

  private def contents(inst: StoreInstance): Map[String, String] = {
    val tx = inst.begin()
    val it = tx.iterator(KeyRange.all)
    try it.map(kv => new String(kv.key, UTF_8) -> new String(kv.value, UTF_8)).toMap
    finally { it.close(); tx.discard() }
  }

  private val localStats = FileSystem.getStatistics("file", classOf[RawLocalFileSystem])

  /** What `load` returned, and the checkpoint bytes this thread read during it. */
  private def counted(load: => LoadReport): (LoadReport, Long) = {
    val before = localStats.getThreadStatistics.getBytesRead
    val report = load
    (report, localStats.getThreadStatistics.getBytesRead - before)
  }

  test("under format v1 the load of the version this instance just committed reads no changelog, batch after batch") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val a = open(root)
    try {
      (1 to 12).foreach { v =>
        assert(commit(a, s"k$v" -> s"$v", "last" -> s"$v") == v)
        val (report, read) = counted(a.load(v, None))
        assert(report.path == LoadPath.Reused)
        assert(read == 0, s"the load of version $v read $read bytes of the checkpoint")
      }
      assert(contents(a)("last") == "12")
    } finally a.close()
  }

  test("an instance that did not write the version, or was restarted since, reads its changelog header") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val local = newTempPath("local")
    val a = open(root, local)
    (1 to 3).foreach(v => commit(a, s"k$v" -> s"$v"))
    a.close()
    val restarted = open(root, local)
    try {
      val (report, read) = counted(restarted.load(3, None))
      assert(report.path == LoadPath.Reused, "the local directory still holds version 3")
      assert(read > 0, "what the closed instance wrote is not known to the new one: the header is read")
    } finally restarted.close()
  }

  test("a changelog another instance replaced since this one wrote it is read, and the replacement wins") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val a = open(root)
    val zombie = open(root)
    try {
      commit(a, "k1" -> "1")
      commit(a, "k2" -> "a")
      zombie.load(1, None)
      assert(commit(zombie, "k2" -> "zombie") == 2) // replaces 2.txlog under checkpoint format v1
      val (report, read) = counted(a.load(2, None))
      assert(read > 0)
      assert(report.path == LoadPath.Rebuilt, "the local version 2 is another attempt's: never reused")
      assert(contents(a) == Map("k1" -> "1", "k2" -> "zombie"))
      assert(a.committed.checkpointId == zombie.committed.checkpointId)
      assert(commit(a, "k3" -> "3") == 3)
      val fresh = open(root)
      try {
        fresh.load(3, None)
        assert(contents(fresh) == Map("k1" -> "1", "k2" -> "zombie", "k3" -> "3"), "one lineage in the checkpoint")
      } finally fresh.close()
    } finally { a.close(); zombie.close() }
  }

  test("under format v2 Spark names the id, and the load of the version just committed reads nothing either") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val a = open(root, idsInFileNames = true)
    try {
      (1 to 3).foreach { v =>
        commit(a, s"k$v" -> s"$v")
        val (report, read) = counted(a.load(v, a.committed.checkpointId))
        assert(report.path == LoadPath.Reused && read == 0)
      }
    } finally a.close()
  }
}
