package txstate.checkpoint

import java.io.{BufferedInputStream, File, FileInputStream}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.compat.CheckpointFileManager
import txstate.engine.{ChangeRecord, ChangeSource}

/**
 * The durable files of one store instance, read and written by its owner: [[CheckpointReader]]
 * plus every write (docs/ARCHITECTURE.md, "Files in a checkpoint").
 */
final class StoreCheckpoint private (root: Path, files: CheckpointFileManager, identities: FileIdentities,
    reads: CheckpointReads) extends CheckpointReader(root, reads) with AutoCloseable {
  private def this(root: Path, files: CheckpointFileManager, hadoopConf: Configuration, local: Boolean) =
    this(root, files, FileIdentities.forLocation(root, hadoopConf, local),
      CheckpointReads.of(files, if (local) None else Some(root.getFileSystem(hadoopConf))))
  private def this(root: Path, files: CheckpointFileManager, hadoopConf: Configuration) =
    this(root, files, hadoopConf, files.isInstanceOf[LocalCheckpointFileManager])
  def this(root: Path, hadoopConf: Configuration) =
    this(root, LocalCheckpointFileManager.forLocation(root, hadoopConf), hadoopConf)

  @volatile private var rootExists = false

  def writeChangelog(header: ChangelogHeader, idInName: Option[String], changes: Iterator[ChangeRecord]): Long =
    writeOwnChangelog(header, idInName, ChangeSource.of(changes)).bytes

  /**
   * Writes the changelog of a commit and returns it with what recognizes the file later from its
   * status alone (see [[stillAsWritten]]), where the file system offers that and the name may be
   * rewritten: under checkpoint format v1 (no id in the name) every attempt of a version writes
   * `<v>.txlog`; under v2 a name belongs to one attempt, and Spark names the attempt to load.
   */
  def writeOwnChangelog(header: ChangelogHeader, idInName: Option[String], changes: ChangeSource)
      : WrittenChangelog = {
    ensureRoot()
    val path = changelogPath(header.version, idInName)
    val digest = if (idInName.isEmpty) identities.newDigest() else None
    val bytes = ChangelogFile.write(files, path, header, changes, digest)
    WrittenChangelog(header, path, bytes, if (idInName.isEmpty) identities.of(path, bytes, digest) else None)
  }

  /**
   * True only when the file at `written.path` is certainly still the one this process wrote, told
   * from its status (one metadata request, or a local stat) without reading it. False whenever
   * that cannot be told: the caller then reads the header as it would without this knowledge.
   */
  def stillAsWritten(written: WrittenChangelog): Boolean =
    written.identity.exists(identities.unchanged(written.path, _))

  /** Creates the store directory once (Spark's file managers do not create parents on every file system). */
  private def ensureRoot(): Unit = if (!rootExists) {
    if (!files.exists(root)) files.mkdirs(root)
    rootExists = true
  }

  def writeSegment(header: ChangelogHeader, k: Int, changes: ChangeSource): Long = {
    ensureRoot()
    ChangelogFile.write(files, segmentPath(header.version, header.checkpointId, k), header, changes)
  }

  def writeManifest(manifest: SnapshotManifest): Unit =
    SnapshotManifest.write(files, snapshotPath(manifest.version, manifest.checkpointId), manifest)

  /** Records the retention of a cleanup about to delete versions ([[RetentionRecord]]). */
  def writeRetention(minVersionsToRetain: Int): Unit = {
    ensureRoot()
    RetentionRecord.write(files, retentionPath, minVersionsToRetain)
  }

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
