package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.security.MessageDigest

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.checkpoint.NewerFormatException
import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.engine.{EngineOptions, KeyRange}

/** Read-only followers (KIP-813): a replica follows a writer's checkpoint without changing it. */
final class FollowerReplicaTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def str(a: Array[Byte]): String = new String(a, UTF_8)

  private def newRoot(): Path = new Path(newTempPath("checkpoint").toURI)

  private def localFile(p: Path): File = new File(p.toUri)

  private def openWriter(root: Path, options: StoreOptions = StoreOptions()): StoreInstance =
    StoreInstance.open(LocalDirectory(newTempPath("writer"), stable = true, None), root, new Configuration(), options,
      "writer")

  private def openReplica(root: Path, idsInFileNames: Boolean = false, replayLimit: Int = 1000,
      local: File = newTempPath("follower")): FollowerReplica =
    FollowerReplica.open(LocalDirectory.temporary(local), root, new Configuration(), EngineOptions(), idsInFileNames,
      replayLimit, "follower")

  // ---- a writer's history, and the model it must produce ----------------------------------------

  private sealed trait Op
  private final case class Put(key: String, value: String) extends Op
  private final case class Delete(key: String) extends Op
  private final case class DeleteRange(from: String, until: String) extends Op

  private def key(v: Int, i: Int): String = f"k$v%03d-$i"

  /** Version v: five new keys and "last"; every third version deletes a key, every fourth a whole earlier version's keys. */
  private def ops(v: Int): Seq[Op] =
    (0 until 5).map(i => Put(key(v, i), s"v$v")) ++ Seq(Put("last", s"$v")) ++
      (if (v % 3 == 0) Seq(Delete(key(v - 1, 0)), Delete("never-written")) else Nil) ++
      (if (v % 4 == 0) Seq(DeleteRange(f"k${v - 2}%03d", f"k${v - 1}%03d")) else Nil)

  private def applied(model: Map[String, String], op: Op): Map[String, String] = op match {
    case Put(k, value) => model + (k -> value)
    case Delete(k) => model - k
    case DeleteRange(from, until) => model.filter { case (k, _) => k < from || k >= until }
  }

  /** The expected contents of versions 0..n. */
  private def history(n: Int): IndexedSeq[Map[String, String]] =
    (1 to n).scanLeft(Map.empty[String, String])((model, v) => ops(v).foldLeft(model)(applied))

  /** Commits version v's writes on the writer's current version. */
  private def commitVersion(w: StoreInstance, v: Int): CommitReport = {
    val batch = w.begin()
    ops(v).foreach {
      case Put(k, value) => batch.put(b(k), b(value))
      case Delete(k) => batch.delete(b(k))
      case DeleteRange(from, until) => batch.deleteRange(b(from), b(until))
    }
    val report = batch.commit()
    assert(report.version == v)
    report
  }

  private def writerContents(w: StoreInstance): Map[String, String] = {
    val tx = w.begin()
    val it = tx.iterator(KeyRange.all)
    try it.map(kv => str(kv.key) -> str(kv.value)).toMap
    finally { it.close(); tx.discard() }
  }

  /** The version the replica's committed view shows, and exactly what it holds. */
  private def view(r: FollowerReplica): (Long, Map[String, String]) =
    r.readCommittedView(5000) { view =>
      val it = view.range(KeyRange.all)
      try ((view.point.version, it.map(kv => str(kv.key) -> str(kv.value)).toMap)) finally it.close()
    }.getOrElse(fail("the replica offers no committed view"))

  private def assertHolds(r: FollowerReplica, version: Int, expected: Map[String, String]): Unit = {
    val (shown, rows) = view(r)
    assert(shown == version, s"the view shows version $shown, not $version")
    assert(rows == expected, s"version $version differs")
    assert(r.committed.version == version && r.committed.numKeys == expected.size)
  }

  /** Every file and directory under `root` with the SHA-256 of its bytes. */
  private def fingerprint(root: Path): Map[String, String] = {
    val dir = localFile(root).toPath
    val paths = Files.walk(dir)
    try paths.iterator().asScala.map { p =>
      val hash =
        if (Files.isDirectory(p)) "directory"
        else MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)).map(x => f"$x%02x").mkString
      dir.relativize(p).toString -> hash
    }.toMap
    finally paths.close()
  }

  /** Gives a changelog frame a newer format (byte 7) and a matching CRC32C, as a newer release would write it. */
  private def makeNewerFormat(file: File): Unit = {
    val bytes = Files.readAllBytes(file.toPath)
    bytes(7) = 9
    val crc = txstate.compat.JavaLibrary.newCrc32c()
    crc.update(bytes, 0, bytes.length - 4)
    java.nio.ByteBuffer.wrap(bytes, bytes.length - 4, 4).putInt(crc.getValue.toInt)
    Files.write(file.toPath, bytes)
  }

  // ---- the tests -------------------------------------------------------------------------------

  for ((label, options) <- Seq(
      "" -> StoreOptions(),
      " (with early-commit segments)" -> StoreOptions(limits = UncommittedLimits(Some(3), None)))) {
    test(s"a replica catches up version by version and holds exactly the writer's rows at each$label") {
      val root = newRoot()
      val writer = openWriter(root, options)
      val replica = openReplica(root)
      val expected = history(12)
      try {
        assertHolds(replica, 0, Map.empty)
        (1 to 8).foreach { v =>
          commitVersion(writer, v)
          val step = replica.advanceTo(v, None)
          if (v == 1) assert(step == FollowStep.Reanchored(1), "an empty replica is filled from the chain's root")
          else assert(step == FollowStep.CaughtUp(1), s"version $v")
          assertHolds(replica, v, expected(v))
          assert(expected(v) == writerContents(writer))
          assert(replica.committed == writer.committed)
        }
        (9 to 12).foreach(commitVersion(writer, _))
        assert(replica.advanceTo(12, None) == FollowStep.CaughtUp(4))
        assertHolds(replica, 12, expected(12))
        assert(replica.committed == writer.committed)
        if (options.limits != UncommittedLimits.none)
          assert(localFile(root).list().exists(_.endsWith(".txseg")), "the writer committed early, in segments")
      } finally { replica.close(); writer.close() }
    }
  }

  test("advancing to an older or the same version leaves the replica and its view where they are") {
    val root = newRoot()
    val writer = openWriter(root)
    val replica = openReplica(root)
    try {
      (1 to 5).foreach(commitVersion(writer, _))
      replica.advanceTo(5, None)
      assert(replica.advanceTo(3, None) == FollowStep.Unchanged)
      assertHolds(replica, 5, history(5)(5))
      assert(replica.advanceTo(5, None) == FollowStep.Unchanged)
      assert(replica.advanceTo(0, None) == FollowStep.Unchanged)
      assertHolds(replica, 5, history(5)(5))
    } finally { replica.close(); writer.close() }
  }

  test("a replica whose changelogs the writer's cleanup deleted re-anchors on a snapshot with exact rows") {
    val root = newRoot()
    val writer = openWriter(root, StoreOptions(snapshotInterval = 2))
    val replica = openReplica(root)
    try {
      commitVersion(writer, 1)
      assert(replica.advanceTo(1, None) == FollowStep.Reanchored(1))
      (2 to 4).foreach(commitVersion(writer, _))
      assert(writer.uploadSnapshot().exists(_.version == 4))
      (5 to 6).foreach(commitVersion(writer, _)) // version 6 is staged, not uploaded
      writer.cleanup(minVersionsToRetain = 2, storedFileGraceMs = 0)
      assert(!localFile(root).list().contains("2.txlog"), "cleanup deleted what the replica needs to catch up")
      assert(replica.advanceTo(6, None) == FollowStep.Reanchored(2), "snapshot 4, then changelogs 5 and 6")
      assertHolds(replica, 6, history(6)(6))
      commitVersion(writer, 7)
      assert(replica.advanceTo(7, None) == FollowStep.CaughtUp(1), "after the re-anchor it replays again")
      assertHolds(replica, 7, history(7)(7))
    } finally { replica.close(); writer.close() }
  }

  test("a replica further behind than replayLimit re-anchors on a newer snapshot instead of replaying") {
    val root = newRoot()
    val writer = openWriter(root, StoreOptions(snapshotInterval = 4))
    val replica = openReplica(root, replayLimit = 3)
    try {
      commitVersion(writer, 1)
      replica.advanceTo(1, None)
      (2 to 8).foreach(commitVersion(writer, _))
      assert(writer.uploadSnapshot().exists(_.version == 8))
      (9 to 10).foreach(commitVersion(writer, _))
      assert(replica.advanceTo(10, None) == FollowStep.Reanchored(2), "snapshot 8, then changelogs 9 and 10")
      assertHolds(replica, 10, history(10)(10))
      (11 to 13).foreach(commitVersion(writer, _))
      assert(replica.advanceTo(13, None) == FollowStep.CaughtUp(3), "within the limit it replays")
      (14 to 20).foreach(commitVersion(writer, _))
      // Staged snapshots (12, 16, 20) are not uploaded: with no newer snapshot it replays, however far behind.
      assert(replica.advanceTo(20, None) == FollowStep.CaughtUp(7))
      assertHolds(replica, 20, history(20)(20))
    } finally { replica.close(); writer.close() }
  }

  test("a changelog of a newer format stops the replica with TXSTATE_FOLLOWER_NEWER_FORMAT naming the file") {
    val root = newRoot()
    val writer = openWriter(root)
    val replica = openReplica(root)
    try {
      (1 to 3).foreach(commitVersion(writer, _))
      replica.advanceTo(1, None)
      val newer = new Path(root, "2.txlog")
      val original = Files.readAllBytes(localFile(newer).toPath)
      makeNewerFormat(localFile(newer))
      val stopped = intercept[StoreException](replica.advanceTo(3, None))
      assert(stopped.errorCode == "TXSTATE_FOLLOWER_NEWER_FORMAT", stopped.getMessage)
      val e = stopped.getCause.asInstanceOf[NewerFormatException]
      assert(e.path == newer, e.getMessage)
      assert(e.found == 9)
      assert(e.getMessage.contains(newer.toString) && e.getMessage.contains("newer txstate-spark"), e.getMessage)
      assertHolds(replica, 1, history(3)(1))
      Files.write(localFile(newer).toPath, original)
      assert(replica.advanceTo(3, None) == FollowStep.CaughtUp(2))
      assertHolds(replica, 3, history(3)(3))
    } finally { replica.close(); writer.close() }
  }

  test("following through many versions and a re-anchor leaves every checkpoint file byte for byte as it was") {
    val root = newRoot()
    val writer = openWriter(root, StoreOptions(snapshotInterval = 5, limits = UncommittedLimits(Some(4), None)))
    val versions = 30
    try {
      (1 to versions).foreach { v =>
        commitVersion(writer, v)
        if (v % 10 == 0) writer.uploadSnapshot()
      }
      writer.cleanup(minVersionsToRetain = 12, storedFileGraceMs = 0) // keeps 19..30 loadable, from snapshot 10 on
    } finally writer.close()
    val before = fingerprint(root)
    assert(before.keys.exists(_.startsWith("sst")) && !before.contains("5.txlog"))

    val replica = openReplica(root, replayLimit = 4)
    val steps =
      try {
        val followed = (Seq(12, 13, 14, 15, 17, 18) ++ (25 to versions)).map(v => v -> replica.advanceTo(v, None))
        assertHolds(replica, versions, history(versions)(versions))
        followed
      } finally replica.close()
    assert(steps.exists(_._2.isInstanceOf[FollowStep.Reanchored]) && steps.exists(_._2.isInstanceOf[FollowStep.CaughtUp]),
      steps.toString)
    val after = fingerprint(root)
    assert(after.keySet -- before.keySet == Set.empty, "the replica added files to the checkpoint")
    assert(after == before, "the replica changed the checkpoint")
    assert(!after.keys.exists(n => n.endsWith(".tmp") || n.endsWith(".crc")))
  }

  test("under checkpoint format v2 the replica follows the checkpoint ids the writer's commits produced") {
    val root = newRoot()
    val writer = openWriter(root, StoreOptions(idsInFileNames = true))
    val other = openWriter(root, StoreOptions(idsInFileNames = true))
    val replica = openReplica(root, idsInFileNames = true)
    try {
      val ids = (1 to 4).map(v => commitVersion(writer, v).point.checkpointId)
      assert(ids.forall(_.isDefined) && ids.distinct.size == 4)
      assert(ids.last == writer.committed.checkpointId)
      assert(localFile(root).list().contains(s"4_${ids.last.get}.txlog"))
      assert(replica.advanceTo(2, ids(1)) == FollowStep.Reanchored(2))
      assertHolds(replica, 2, history(4)(2))
      assert(replica.advanceTo(4, ids(3)) == FollowStep.CaughtUp(2))
      assertHolds(replica, 4, history(4)(4))
      assert(replica.committed.checkpointId == ids(3))
      assert(replica.advanceTo(4, ids(3)) == FollowStep.Unchanged)

      // Another attempt of version 4 (a re-run elsewhere): the replica follows the id it is given.
      other.load(3, ids(2))
      val tx = other.begin()
      tx.put(b("rerun"), b("4"))
      val rerun = tx.commit().point.checkpointId
      assert(rerun != ids(3))
      assert(replica.advanceTo(4, rerun) == FollowStep.Reanchored(4))
      assertHolds(replica, 4, history(4)(3) + ("rerun" -> "4"))
    } finally { replica.close(); other.close(); writer.close() }
  }

  test("close deletes the replica's local directory, refuses later steps, and is idempotent") {
    val root = newRoot()
    val writer = openWriter(root)
    val local = newTempPath("follower")
    val replica = openReplica(root, local = local)
    try {
      (1 to 3).foreach(commitVersion(writer, _))
      replica.advanceTo(3, None)
      assert(local.isDirectory)
      replica.close()
      assert(!local.exists(), "the local copy outlived the replica")
      replica.close()
      val e = intercept[StoreException](replica.advanceTo(3, None))
      assert(e.errorCode == "TXSTATE_INSTANCE_CLOSED")
      assert(replica.readCommittedView(0)(_.point).isEmpty)
    } finally { replica.close(); writer.close() }
  }
}
