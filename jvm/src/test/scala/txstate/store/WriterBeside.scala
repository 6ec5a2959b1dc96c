package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.atomic.AtomicBoolean

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.checkpoint.{Changelog, CheckpointEntry, CheckpointReader}

/**
 * A store instance writing a checkpoint while something else reads it, as a running query's does:
 * at version 6, one key per version and `k2` deleted at 5, with a snapshot of version 4 (by
 * default) staged and not uploaded. Its maintenance then uploads that snapshot and deletes the
 * changelogs below it.
 */
object WriterBeside {
  /** What the store holds at version 6. */
  val contentsAt6: Map[String, String] = Map("last" -> "6") ++ (1 to 6).filter(_ != 2).map(v => s"k$v" -> s"v$v")

  def at6(root: Path, local: File, snapshotInterval: Int = 4): StoreInstance = {
    val writer = StoreInstance.open(LocalDirectory(local, stable = true, None), root, new Configuration(),
      StoreOptions(snapshotInterval = snapshotInterval), "writer")
    writer.load(0, None)
    (1 to 6).foreach { v =>
      val batch = writer.begin()
      batch.put(s"k$v".getBytes(UTF_8), s"v$v".getBytes(UTF_8))
      batch.put("last".getBytes(UTF_8), s"$v".getBytes(UTF_8))
      if (v == 5) batch.delete("k2".getBytes(UTF_8))
      require(batch.commit().version == v)
    }
    writer
  }

  /** The maintenance Spark runs: upload what is staged (version `staged`), then clean up keeping `retain` versions. */
  def maintain(writer: StoreInstance, retain: Int, staged: Long = 4): Unit = {
    require(writer.uploadSnapshot().map(_.version).contains(staged), s"the snapshot of version $staged was staged")
    writer.cleanup(minVersionsToRetain = retain, storedFileGraceMs = 10 * 60 * 1000)
  }

  /** The changelogs in a local checkpoint directory, by name. */
  def changelogFiles(root: Path): Set[String] =
    Option(new File(root.toUri).list()).fold(Set.empty[String])(_.filter(_.endsWith(".txlog")).toSet)
}

/**
 * Reads a checkpoint like any reader, and runs `between` once, right after the first call of the
 * step `after` names ("snapshots" or "readChangelog"): another writer's work lands at
 * that exact point, on the same real files.
 */
class InterleavedReader(root: Path, after: String, between: () => Unit)
    extends CheckpointReader(root, ReadOnlyFileSystem.reads(root, new Configuration())) {
  private val ran = new AtomicBoolean(false)
  private def once(step: String): Unit = if (step == after && ran.compareAndSet(false, true)) between()

  /** Whether `between` ran. */
  def interleaved: Boolean = ran.get

  override def snapshots(): Seq[CheckpointEntry] = { val listed = super.snapshots(); once("snapshots"); listed }
  override def readChangelog(version: Long, idInName: Option[String]): Changelog = {
    once("readChangelog")
    super.readChangelog(version, idInName)
  }
}
