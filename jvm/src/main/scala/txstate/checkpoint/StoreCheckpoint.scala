package txstate.checkpoint

import java.io.{BufferedInputStream, File, FileInputStream}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.compat.CheckpointFileManager
import txstate.engine.ChangeRecord

/**
 * The durable files of one store instance, read and written by its owner: [[CheckpointReader]]
 * plus every write (docs/ARCHITECTURE.md, "Files in a checkpoint").
 */
final class StoreCheckpoint private (root: Path, files: CheckpointFileManager)
    extends CheckpointReader(root, CheckpointReads.of(files)) with AutoCloseable {
  def this(root: Path, hadoopConf: Configuration) = this(root, LocalCheckpointFileManager.forLocation(root, hadoopConf))

  @volatile private var rootExists = false

  def writeChangelog(header: ChangelogHeader, idInName: Option[String], changes: Iterator[ChangeRecord]): Long = {
    ensureRoot()
    ChangelogFile.write(files, changelogPath(header.version, idInName), header, changes)
  }

  /** Creates the store directory once (Spark's file managers do not create parents on every file system). */
  private def ensureRoot(): Unit = if (!rootExists) {
    if (!files.exists(root)) files.mkdirs(root)
    rootExists = true
  }

  def writeSegment(header: ChangelogHeader, k: Int, changes: Iterator[ChangeRecord]): Long = {
    ensureRoot()
    ChangelogFile.write(files, segmentPath(header.version, header.checkpointId, k), header, changes)
  }

  def writeManifest(manifest: SnapshotManifest): Unit =
    SnapshotManifest.write(files, snapshotPath(manifest.version, manifest.checkpointId), manifest)

  @volatile private var sstDirExists = false

  /** Copies a local file to `sst/<storedName>`; returns its size and CRC32C. */
  def upload(local: File, storedName: String): (Long, Long) = {
    if (!sstDirExists) {
      if (!files.exists(sstDir)) files.mkdirs(sstDir)
      sstDirExists = true
    }
    val target = files.createAtomic(new Path(sstDir, storedName), true)
    try {
      val in = new BufferedInputStream(new FileInputStream(local), 1 << 16)
      val copied = try CheckpointReader.copyCounting(in, target) finally in.close()
      target.close()
      copied
    } catch {
      case e: Throwable =>
        try target.cancel() catch { case scala.util.control.NonFatal(c) => e.addSuppressed(c) }
        e match {
          case io: java.io.IOException => throw CheckpointErrors.writeFailed(new Path(sstDir, storedName), io)
          case other => throw other
        }
    }
  }

  def delete(path: Path): Unit = files.delete(path)

  def close(): Unit = txstate.compat.closeCheckpointFiles(files)
}
