package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.atomic.AtomicInteger

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.checkpoint.{CheckpointEntry, CheckpointReader}
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
 * right after the step named, then goes on as before.
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
}
