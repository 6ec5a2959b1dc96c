package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.atomic.AtomicInteger

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.{Background, TempDirectories}
import txstate.checkpoint.{CheckpointEntry, CheckpointReader, SnapshotFile}
import txstate.engine.{KeyRange, TxEngine}
import txstate.store.WriterBeside.{changelogFiles, contentsAt6, maintain}

/**
 * A load while another instance of the same store cleans up its checkpoint. After a query restart
 * Spark unloads the old run's provider, and on 4.1+ runs its maintenance first, while the new run
 * already loads the store elsewhere: the old one uploads a snapshot and deletes the changelogs
 * below it, which the new one's walk, listed before the upload, may still be about to read.
 *
 * The two interleave at a fixed point, with real files and real databases on both sides: the
 * loading side reads through an [[InterleavedReader]] that lets the writer's maintenance run once,
 * right after the step named, then goes on as before. The maintenance of two instances of one store
 * (a snapshot upload, a cleanup round) does not interleave at all in one JVM.
 */
final class ConcurrentCleanupTest extends AnyFunSuite with TempDirectories {
  // The writer keeps 2 versions: its cleanup at version 6 anchors on the snapshot of 4 and deletes 1 to 3.
  private val retained = 2

  private def contents(engine: TxEngine): Map[String, String] = {
    val tx = engine.begin()
    val it = tx.iterator(KeyRange.all)
    try it.map(kv => new String(kv.key, UTF_8) -> new String(kv.value, UTF_8)).toMap
    finally { it.close(); tx.discard() }
  }

  /** A writer at version 6 and an empty engine loading its checkpoint: `body(root, writer, engine)`. */
  private def withWriterAndLoader(body: (Path, StoreInstance, TxEngine) => Unit): Unit = {
    val root = new Path(newTempPath("checkpoint").toURI)
    val writer = WriterBeside.at6(root, newTempPath("writer"))
    val engine = TxEngine.open(newTempPath("loader"))
    try body(root, writer, engine)
    finally { engine.close(); writer.close() }
  }

  private def loaderOver(engine: TxEngine, reader: CheckpointReader): CheckpointLoader =
    new CheckpointLoader(engine, reader, idsInFileNames = false, "loader", _ => ())

  test("a rebuild whose listing a cleanup outdated finds the new snapshot and loads the version exactly") {
    withWriterAndLoader { (root, writer, engine) =>
      // Listed with no snapshot in it: this attempt walks down to version 1, which the cleanup deletes.
      val reader = new InterleavedReader(root, "snapshots", () => maintain(writer, retained))
      val replayed = loaderOver(engine, reader).rebuild(6, None)
      assert(reader.interleaved)
      assert(changelogFiles(root) == Set("4.txlog", "5.txlog", "6.txlog"), "the cleanup ran between listing and walk")
      assert(replayed == 2, "restored the snapshot of version 4, then replayed 5 and 6")
      assert(engine.committed.version == 6)
      assert(contents(engine) == contentsAt6)
    }
  }

  test("a catch-up whose changelogs a cleanup deleted under it rebuilds from the new snapshot instead") {
    withWriterAndLoader { (root, writer, engine) =>
      // The loader holds version 2, so it catches up; its replay of 3 starts after the cleanup deleted 3.
      val plain = new CheckpointReader(root, ReadOnlyFileSystem.reads(root, new Configuration()))
      loaderOver(engine, plain).rebuild(2, None)
      assert(engine.committed.version == 2)
      val reader = new InterleavedReader(root, "readChangelog", () => maintain(writer, retained))
      val loader = loaderOver(engine, reader)
      assert(loader.catchUp(6, None).isEmpty, "the catch-up gives way to a rebuild")
      assert(reader.interleaved)
      assert(changelogFiles(root) == Set("4.txlog", "5.txlog", "6.txlog"))
      assert(loader.rebuild(6, None) == 2)
      assert(contents(engine) == contentsAt6)
    }
  }

  test("a rebuild that fails with no snapshot appearing since its listing fails at once, naming the missing file") {
    withWriterAndLoader { (root, _, engine) =>
      assert(new File(new File(root.toUri), "3.txlog").delete())
      val listings = new AtomicInteger()
      val reader = new InterleavedReader(root, "snapshots", () => ()) {
        override def snapshots(): Seq[CheckpointEntry] = { listings.incrementAndGet(); super.snapshots() }
      }
      val failure = intercept[StoreException](loaderOver(engine, reader).rebuild(6, None))
      assert(failure.getMessage.contains("3.txlog"), failure.getMessage)
      assert(listings.get == 2, "listed once for the attempt, once to see that nothing changed: no second attempt")
    }
  }

  // ---- a snapshot after a restore, when another instance's cleanup took the restored one away ----

  /**
   * A checkpoint at version 6 with a snapshot of 6 uploaded, and a new instance that restored
   * version 6 from it (adopting its stored files, as after a query restart; nothing replayed, so
   * no compaction has replaced them yet): `body(root, restarted)`.
   */
  private def withRestoredInstance(body: (Path, StoreInstance) => Unit): Unit = {
    val root = new Path(newTempPath("checkpoint").toURI)
    val writer = WriterBeside.at6(root, newTempPath("writer"), snapshotInterval = 6)
    try maintain(writer, retain = 10, staged = 6) finally writer.close()
    val restarted = StoreInstance.open(LocalDirectory(newTempPath("restarted"), stable = true, None), root,
      new Configuration(), StoreOptions(), "restarted")
    try {
      assert(restarted.load(6, None).path == LoadPath.Rebuilt)
      body(root, restarted)
    } finally restarted.close()
  }

  private def reader(root: Path) = new CheckpointReader(root, ReadOnlyFileSystem.reads(root, new Configuration()))

  test("an instance's upload and cleanup wait while another instance of the store is in maintenance in this JVM") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val writer = WriterBeside.at6(root, newTempPath("writer"))
    try {
      val before = changelogFiles(root)
      // The test holds what another instance's snapshot upload or cleanup round holds.
      CheckpointMaintenanceLocks.holding(root, "another instance") {
        val maintenance = Background("writer-maintenance")(maintain(writer, retained))
        val early = maintenance.await(1)
        assert(early.isEmpty, s"the writer's maintenance ran beside the other instance's: $early")
        assert(reader(root).snapshots().isEmpty && changelogFiles(root) == before, "it wrote or deleted meanwhile")
        maintenance
      }.result(60)
      assert(reader(root).snapshots().map(_.version) == Seq(4L))
      assert(changelogFiles(root) == before -- Set("1.txlog", "2.txlog", "3.txlog"), changelogFiles(root))
      assert(CheckpointMaintenanceLocks.inUse.isEmpty, "a lock outlived its holders")
    } finally writer.close()
  }

  test("an instance's first load while another instance's maintenance runs is counted; beside its own, not") {
    val root = new Path(newTempPath("checkpoint").toURI)
    WriterBeside.at6(root, newTempPath("writer")).close()
    def loadOf(name: String, maintainer: StoreInstance => AnyRef): Long = {
      val instance = StoreInstance.open(LocalDirectory(newTempPath(name), stable = true, None), root,
        new Configuration(), StoreOptions(), name)
      try {
        val before = CheckpointMaintenanceLocks.loadsBesideMaintenance
        // Held on this thread: the load below runs on it too (a load takes no lock), inside the round.
        CheckpointMaintenanceLocks.holding(root, maintainer(instance)) {
          assert(instance.load(6, None).path == LoadPath.Rebuilt)
        }
        CheckpointMaintenanceLocks.loadsBesideMaintenance - before
      } finally instance.close()
    }
    assert(loadOf("beside-another", _ => "another instance") == 1)
    assert(loadOf("beside-its-own", instance => instance) == 0)
    assert(CheckpointMaintenanceLocks.inUse.isEmpty, "an entry outlived its users")
  }

  /**
   * Commits version 7 with a snapshot and uploads it: the upload's report and the manifest's stored
   * files. The batch writes no row, so the rows' column family is not flushed again: it usually
   * still holds the restored file, for the snapshot of 7 to share.
   */
  private def snapshotAt7(root: Path, inst: StoreInstance): (SnapshotReport, Seq[SnapshotFile]) = {
    val batch = inst.begin()
    assert(batch.commit(forceSnapshot = true).version == 7)
    val report = inst.uploadSnapshot().getOrElse(fail("nothing was staged at version 7"))
    val seven = reader(root).snapshots().filter(_.version == 7)
    assert(seven.size == 1, seven)
    (report, reader(root).readManifest(7, seven.head.id.get).files)
  }

  /** The files of `seven` that are `six`'s SST files as the database still holds them: what may be shared. */
  private def sharable(six: Seq[SnapshotFile], seven: Seq[SnapshotFile]): Seq[SnapshotFile] =
    seven.filter(f => f.localName.endsWith(".sst") && six.exists(s => s.localName == f.localName && s.size == f.size))

  // Whether the restored database still holds a file of the snapshot when version 7 is staged depends
  // on RocksDB's background compactions (under CI's load they may have replaced every one), so both
  // tests hold for whatever is left to share, exactly.
  test("a snapshot after a restore shares the stored files of the snapshot restored, while they are there") {
    withRestoredInstance { (root, restarted) =>
      val six = reader(root).readManifest(6, reader(root).snapshots().head.id.get).files
      val (report, seven) = snapshotAt7(root, restarted)
      val candidates = sharable(six, seven)
      assert(candidates.forall(f => six.exists(_.storedName == f.storedName)), s"copied, not shared: $candidates")
      assert(report.reusedBytes == candidates.map(_.size).sum, report)
      seven.foreach(reader(root).verifyStored)
    }
  }

  test("a snapshot never lists a stored file another instance's cleanup deleted since the restore: it copies it again") {
    withRestoredInstance { (root, restarted) =>
      // What a cleanup anchored on a newer snapshot, by another instance, does to the snapshot of 6.
      val Seq(sixEntry) = reader(root).snapshots()
      val six = reader(root).readManifest(6, sixEntry.id.get).files
      six.foreach(f => assert(new File(new File(root.toUri), s"sst/${f.storedName}").delete()))
      assert(new File(sixEntry.path.toUri).delete())
      val (report, seven) = snapshotAt7(root, restarted)
      assert(sharable(six, seven).forall(f => !six.exists(_.storedName == f.storedName)), "a deleted file is listed")
      assert(report.reusedBytes == 0, report)
      seven.foreach(reader(root).verifyStored) // each listed file is stored, whole: a load can restore it
      val fresh = StoreInstance.open(LocalDirectory(newTempPath("fresh"), stable = true, None), root,
        new Configuration(), StoreOptions(), "fresh")
      try {
        assert(fresh.load(7, None).path == LoadPath.Rebuilt)
        assert(fresh.newestSnapshot == 7, "restored from the snapshot of 7, not rebuilt from changelogs")
        val batch = fresh.begin()
        try assert(batch.get("k6".getBytes(UTF_8)).map(new String(_, UTF_8)).contains("v6"))
        finally batch.discard()
      } finally fresh.close()
    }
  }
}
