package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, StandardCopyOption}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.rocksdb.{ColumnFamilyDescriptor, ColumnFamilyHandle, DBOptions, Options, RocksDB}
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using
import txstate.{KilledLockHolder, TempDirectories}
import txstate.checkpoint.StoreCheckpoint
import txstate.engine.KeyRange

/**
 * The corruption matrix (docs/reliability.md, "Corruption matrix"): every kind of file a store
 * instance writes, in the checkpoint and in its local directory, damaged each of the five ways of
 * [[FileDamage]]. A fresh instance then loads the newest version. Each case's outcome is written
 * down in `expected`: either the load recovers and the store holds exactly the model's newest
 * version, or it fails with a message that names the damaged file and says what to do. A wrong
 * answer without an error fails every case.
 */
final class CorruptionMatrixTest extends AnyFunSuite with TempDirectories {
  import CorruptionMatrixTest._
  import FileDamage._

  // ---- the expected outcome of every case ----------------------------------------------------

  private val restoreOrRestart = "restore the file from a backup or restart the query from a new checkpoint"
  private val recovers: Map[FileDamage, Outcome] = FileDamage.all.map(_ -> Recovers).toMap
  private def fails(instruction: String): Map[FileDamage, Outcome] = FileDamage.all.map(_ -> Fails(instruction)).toMap

  private val expected: Map[FileKind, Map[FileDamage, Outcome]] = Map(
    NewestChangelog -> fails(restoreOrRestart),
    NewestChangelogIdInName -> fails(restoreOrRestart),
    Segment -> fails(restoreOrRestart),
    ChangelogBelowSnapshot -> recovers,
    NewestManifest -> recovers,
    SharedSst -> recovers,
    LocalCurrent -> recovers,
    LocalManifest -> recovers,
    LocalDataSst -> recovers,
    LocalCommitPoint -> recovers,
    LocalRocksDbLock -> recovers)

  // ---- the matrix ----------------------------------------------------------------------------

  for (kind <- FileKind.all; damage <- FileDamage.all) {
    test(s"${kind.name}: $damage -> ${describe(expected(kind)(damage))}") {
      val written = copyOf(histories(kind.idsInFileNames))
      val target = kind.locate(written)
      assert(target.isFile, s"${kind.name} is not where the test looks: $target")
      damage(target, kind.older(written))
      val outcome = loadNewest(written, kind.inCheckpoint)
      expected(kind)(damage) match {
        case Recovers =>
          outcome match {
            case Right(state) => assert(state == written.model, s"${kind.name}, $damage: a wrong answer without an error")
            case Left(e) => fail(s"${kind.name}, $damage: expected to recover, but the load failed: ${chain(e)}", e)
          }
        case Fails(instruction) =>
          outcome match {
            case Right(state) =>
              fail(s"${kind.name}, $damage: expected an error, but the load gave " +
                (if (state == written.model) "the exact state (recovered)" else s"a wrong answer: $state"))
            case Left(e) =>
              val message = Option(e.getMessage).getOrElse("")
              assert(message.contains(target.getName), s"the error names ${target.getName}: ${chain(e)}")
              assert(message.contains(instruction), s"the error says '$instruction': ${chain(e)}")
          }
      }
    }
  }

  test("RocksDB's LOCK held by a process that was then killed: never wiped meanwhile, reused afterwards") {
    val written = copyOf(histories(false))
    KilledLockHolder.lockThenKill(new File(written.local, "LOCK")) {
      val e = intercept[Exception](open(written.root, written.local, idsInFileNames = false))
      assert(e.getMessage.contains("LOCK"), chain(e))
      assert(new File(written.local, "CURRENT").isFile, "a database another process holds is not damage: it stays")
    }
    val inst = open(written.root, written.local, idsInFileNames = false)
    try {
      assert(inst.load(5, None).path == LoadPath.Reused, "the directory survived the live holder")
      assert(contents(inst) == written.model)
    } finally inst.close()
  }

  test("a snapshot uploaded from an already damaged local SST (its manifest's CRC32C matches) is skipped, state exact") {
    val written = copyOf(histories(false))
    val sst = SharedSst.locate(written)
    FlipByte(sst, Array.emptyByteArray)
    val bytes = Files.readAllBytes(sst.toPath)
    val crc = txstate.compat.JavaLibrary.newCrc32c()
    crc.update(bytes, 0, bytes.length)
    Using.resource(written.checkpoint) { cp =>
      val manifest = cp.readManifest(4, written.ids(4))
      cp.writeManifest(manifest.copy(files = manifest.files.map(f =>
        if (f.storedName == sst.getName) f.copy(size = bytes.length.toLong, crc32c = crc.getValue) else f)))
    }
    assert(loadNewest(written, onEmptyLocal = true) == Right(written.model))
  }

  // ---- writing and loading -------------------------------------------------------------------

  private def open(root: File, local: File, idsInFileNames: Boolean): StoreInstance =
    StoreInstance.open(LocalDirectory(local, stable = true, None), new Path(root.toURI), new Configuration(),
      StoreOptions(idsInFileNames = idsInFileNames, snapshotInterval = 2), "corruption matrix store")

  /** One history per checkpoint format, written once; every case damages a copy of it. */
  private lazy val histories: Map[Boolean, Written] = Seq(false, true).map(v2 => v2 -> writeVersions(v2)).toMap

  private def copyOf(w: Written): Written =
    w.copy(root = copyTree(w.root, newTempPath("checkpoint")), local = copyTree(w.local, newTempPath("local")))

  /**
   * Versions 1 to 5 of one instance, with snapshots of versions 2 and 4 uploaded and version 5
   * committed in three parts (two early-commit segments). Copies of the checkpoint and the local
   * directory are taken after version 2: the older copies.
   */
  private def writeVersions(idsInFileNames: Boolean): Written = {
    val root = newTempPath("checkpoint")
    val local = newTempPath("local")
    var model = Map.empty[String, String]
    var ids = Map.empty[Long, String]
    def put(tx: StoreBatch, k: String, v: String): Unit = { tx.put(b(k), b(v)); model += k -> v }
    def delete(tx: StoreBatch, k: String): Unit = { tx.delete(b(k)); model -= k }
    def commit(inst: StoreInstance)(writes: StoreBatch => Unit): Unit = {
      val tx = inst.begin()
      writes(tx)
      val point = tx.commit().point
      ids += point.version -> point.checkpointId.get
      if (point.version % 2 == 0) assert(inst.uploadSnapshot().isDefined, s"version ${point.version} has a snapshot")
    }

    val first = open(root, local, idsInFileNames)
    try {
      commit(first)(tx => (1 to 6).foreach(i => put(tx, s"k$i", s"v1-$i")))
      commit(first) { tx => put(tx, "k7", "v2"); put(tx, "k2", "v2"); delete(tx, "k3") }
    } finally first.close()
    val olderRoot = copyTree(root, newTempPath("older-checkpoint"))
    val olderLocal = copyTree(local, newTempPath("older-local"))

    val second = open(root, local, idsInFileNames)
    try {
      assert(second.load(2, ids.get(2).filter(_ => idsInFileNames)).path == LoadPath.Reused)
      commit(second) { tx =>
        tx.deleteRange(b("k4"), b("k6"))
        model --= Seq("k4", "k5")
        put(tx, "k8", "v3")
      }
      commit(second) { tx => put(tx, "k9", "v4"); put(tx, "k1", "v4") }
      commit(second) { tx =>
        (1 to 3).foreach(i => put(tx, s"e$i", "v5"))
        assert(tx.earlyCommit().isDefined)
        put(tx, "e4", "v5"); delete(tx, "k7")
        assert(tx.earlyCommit().isDefined)
        put(tx, "k2", "v5")
      }
    } finally second.close()
    Written(root, local, olderRoot, olderLocal, ids, model, idsInFileNames)
  }

  /** A fresh instance loads version 5: on an empty local directory, or on the written one. */
  private def loadNewest(w: Written, onEmptyLocal: Boolean): Either[Throwable, Map[String, String]] = {
    val local = if (onEmptyLocal) newTempPath("fresh-local") else w.local
    try {
      val inst = open(w.root, local, w.idsInFileNames)
      try {
        inst.load(5, w.ids.get(5).filter(_ => w.idsInFileNames))
        Right(contents(inst))
      } finally inst.close()
    } catch { case e: Exception => Left(e) }
  }

  private def contents(inst: StoreInstance): Map[String, String] = {
    val tx = inst.begin()
    val it = tx.iterator(KeyRange.all)
    try it.map(kv => str(kv.key) -> str(kv.value)).toMap
    finally { it.close(); tx.discard() }
  }

  private def copyTree(from: File, to: File): File = {
    Using.resource(Files.walk(from.toPath)) { paths =>
      paths.forEach { p =>
        val target = to.toPath.resolve(from.toPath.relativize(p))
        if (Files.isDirectory(p)) Files.createDirectories(target)
        else Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES)
      }
    }
    to
  }
}

object CorruptionMatrixTest {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def str(a: Array[Byte]): String = new String(a, UTF_8)

  sealed trait Outcome
  /** The load succeeds and the store holds exactly the model's newest version. */
  case object Recovers extends Outcome
  /** The open or load fails with a message naming the damaged file and saying `instruction`. */
  final case class Fails(instruction: String) extends Outcome

  private def describe(o: Outcome): String = o match {
    case Recovers => "recovers exactly"
    case Fails(_) => "fails naming the file"
  }

  private def chain(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(t => s"${t.getClass.getSimpleName}: ${t.getMessage}")
      .mkString(" <- ")

  /** What one case wrote: the checkpoint, the local directory, their copies after version 2, ids and the model. */
  final case class Written(root: File, local: File, olderRoot: File, olderLocal: File, ids: Map[Long, String],
      model: Map[String, String], idsInFileNames: Boolean) {
    def checkpoint: StoreCheckpoint = new StoreCheckpoint(new Path(root.toURI), new Configuration())
    def inRoot(name: String): File = new File(root, name)
    def changelogName(v: Long): String = if (idsInFileNames) s"${v}_${ids(v)}.txlog" else s"$v.txlog"
    def manifestName(v: Long): String = s"${v}_${ids(v)}.snapshot"
  }

  /** A kind of file: where the damaged one is, and where an older copy of its kind comes from. */
  sealed abstract class FileKind(val name: String, val inCheckpoint: Boolean, val idsInFileNames: Boolean = false) {
    def locate(w: Written): File
    def older(w: Written): Array[Byte]
  }

  /** The changelog of the newest version (frame format 3, LZ4 records), `<v>.txlog` (checkpoint format v1). */
  case object NewestChangelog extends FileKind("changelog <v>.txlog", inCheckpoint = true) {
    def locate(w: Written): File = w.inRoot(w.changelogName(5))
    def older(w: Written): Array[Byte] = Files.readAllBytes(w.inRoot(w.changelogName(4)).toPath)
  }

  /** The same under checkpoint format v2, `<v>_<id>.txlog`. */
  case object NewestChangelogIdInName extends FileKind("changelog <v>_<id>.txlog", inCheckpoint = true,
      idsInFileNames = true) {
    def locate(w: Written): File = w.inRoot(w.changelogName(5))
    def older(w: Written): Array[Byte] = Files.readAllBytes(w.inRoot(w.changelogName(4)).toPath)
  }

  /** The second early-commit segment of version 5; its older copy is the first segment. */
  case object Segment extends FileKind("early-commit segment <v>_<id>-<k>.txseg", inCheckpoint = true) {
    def locate(w: Written): File = w.inRoot(s"5_${w.ids(5)}-2.txseg")
    def older(w: Written): Array[Byte] = Files.readAllBytes(w.inRoot(s"5_${w.ids(5)}-1.txseg").toPath)
  }

  /** A changelog below the newest snapshot (version 3): a load from the snapshot never reads it. */
  case object ChangelogBelowSnapshot extends FileKind("changelog below the newest snapshot", inCheckpoint = true) {
    def locate(w: Written): File = w.inRoot(w.changelogName(3))
    def older(w: Written): Array[Byte] = Files.readAllBytes(w.inRoot(w.changelogName(2)).toPath)
  }

  /** The manifest of the newest snapshot (version 4); its older copy is version 2's manifest. */
  case object NewestManifest extends FileKind("snapshot manifest <v>_<id>.snapshot", inCheckpoint = true) {
    def locate(w: Written): File = w.inRoot(w.manifestName(4))
    def older(w: Written): Array[Byte] = Files.readAllBytes(w.inRoot(w.manifestName(2)).toPath)
  }

  /** An SST file under `sst/` that the newest snapshot uses and the older one does not. */
  case object SharedSst extends FileKind("shared SST sst/<uuid>-<n>.sst", inCheckpoint = true) {
    private def sstsOf(w: Written, v: Long): Seq[String] =
      Using.resource(w.checkpoint)(_.readManifest(v, w.ids(v)).files.map(_.storedName).filter(_.endsWith(".sst")))
    def locate(w: Written): File = {
      val newOnly = sstsOf(w, 4).diff(sstsOf(w, 2))
      assert(newOnly.nonEmpty, "the snapshot of version 4 uploads SST files of its own")
      new File(w.inRoot("sst"), newOnly.max)
    }
    def older(w: Written): Array[Byte] = Files.readAllBytes(new File(w.inRoot("sst"), sstsOf(w, 2).min).toPath)
  }

  /** RocksDB's CURRENT in the local directory; its older copy names the MANIFEST of the older database. */
  case object LocalCurrent extends FileKind("local CURRENT", inCheckpoint = false) {
    def locate(w: Written): File = new File(w.local, "CURRENT")
    def older(w: Written): Array[Byte] = Files.readAllBytes(new File(w.olderLocal, "CURRENT").toPath)
  }

  /** The MANIFEST that CURRENT names; its older copy is the older database's. */
  case object LocalManifest extends FileKind("local MANIFEST-<n>", inCheckpoint = false) {
    private def manifestOf(dir: File): File =
      new File(dir, new String(Files.readAllBytes(new File(dir, "CURRENT").toPath), UTF_8).trim)
    def locate(w: Written): File = manifestOf(w.local)
    def older(w: Written): Array[Byte] = Files.readAllBytes(manifestOf(w.olderLocal).toPath)
  }

  /** The newest SST of the `stamped` family (the rows); its older copy is the older database's. */
  case object LocalDataSst extends FileKind("local SST of the rows (stamped)", inCheckpoint = false) {
    def locate(w: Written): File = newestSst(w.local, "stamped")
    def older(w: Written): Array[Byte] = Files.readAllBytes(newestSst(w.olderLocal, "stamped").toPath)
  }

  /** The newest SST of the `commit` family: the local commit point (the version the directory holds). */
  case object LocalCommitPoint extends FileKind("local commit point (SST of the commit family)", inCheckpoint = false) {
    def locate(w: Written): File = newestSst(w.local, "commit")
    def older(w: Written): Array[Byte] = Files.readAllBytes(newestSst(w.olderLocal, "commit").toPath)
  }

  /** RocksDB's LOCK, as a process that died without closing the database leaves it. */
  case object LocalRocksDbLock extends FileKind("local RocksDB LOCK", inCheckpoint = false) {
    def locate(w: Written): File = new File(w.local, "LOCK")
    def older(w: Written): Array[Byte] = Files.readAllBytes(new File(w.olderLocal, "LOCK").toPath)
  }

  object FileKind {
    def all: Seq[FileKind] = Seq(NewestChangelog, NewestChangelogIdInName, Segment, ChangelogBelowSnapshot,
      NewestManifest, SharedSst, LocalCurrent, LocalManifest, LocalDataSst, LocalCommitPoint, LocalRocksDbLock)
  }

  /** The newest live SST file of `family` in the (closed) database in `dir`, as RocksDB itself lists them. */
  private def newestSst(dir: File, family: String): File = {
    RocksDB.loadLibrary()
    val names = Using.resource(new Options())(o => RocksDB.listColumnFamilies(o, dir.getAbsolutePath).asScala.toSeq)
    val handles = new java.util.ArrayList[ColumnFamilyHandle]()
    Using.resource(new DBOptions()) { options =>
      val db = RocksDB.openReadOnly(options, dir.getAbsolutePath, names.map(new ColumnFamilyDescriptor(_)).asJava, handles)
      try {
        val files = db.getLiveFilesMetaData.asScala.filter(f => new String(f.columnFamilyName(), UTF_8) == family)
        assert(files.nonEmpty, s"the $family family of $dir has SST files")
        new File(dir, files.map(_.fileName().stripPrefix("/")).max)
      } finally {
        handles.asScala.foreach(_.close())
        db.close()
      }
    }
  }
}
