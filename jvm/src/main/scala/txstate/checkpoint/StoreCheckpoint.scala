package txstate.checkpoint

import java.io.{BufferedInputStream, File, FileInputStream, FileOutputStream, InputStream, OutputStream}
import java.util.zip.CRC32C

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path, PathFilter}

import txstate.compat.CheckpointFileManager
import txstate.engine.ChangeRecord

/** A changelog or snapshot manifest found in the checkpoint: its version, id (if named) and path. */
final case class CheckpointEntry(version: Long, id: Option[String], path: Path, modifiedMs: Long)

/**
 * The durable files of one store instance, in Spark's per-instance state directory
 * (docs/ARCHITECTURE.md, "Files in a checkpoint"):
 * - `<version>.txlog` (checkpoint format v1) or `<version>_<checkpointId>.txlog` (format v2);
 * - `<version>_<checkpointId>-<k>.txseg`: the k-th early-commit segment of an open version;
 * - `<version>_<checkpointId>.snapshot`: a snapshot manifest (or `<version>.<checkpointId>.txsnapshot`
 *   beside Spark's HDFS provider, see [[SnapshotNames]]);
 * - `sst/<uuid>-<rocksdb file name>`: RocksDB files, shared by every snapshot that contains them.
 *
 * `idInName` parameters are the checkpoint id as it appears in a changelog's file name: Some under
 * checkpoint format v2, None under v1.
 */
final class StoreCheckpoint(val root: Path, hadoopConf: Configuration) extends AutoCloseable {
  private val files = LocalCheckpointFileManager.forLocation(root, hadoopConf)
  private val sstDir = new Path(root, "sst")

  def changelogPath(version: Long, idInName: Option[String]): Path =
    new Path(root, idInName.fold(s"$version.txlog")(id => s"${version}_$id.txlog"))

  /** The k-th early-commit segment (k from 1) of the open version's commit attempt `checkpointId`. */
  def segmentPath(version: Long, checkpointId: String, k: Int): Path = new Path(root, s"${version}_$checkpointId-$k.txseg")

  def snapshotPath(version: Long, checkpointId: String): Path = new Path(root, SnapshotNames.written(version, checkpointId))

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

  def readChangelog(version: Long, idInName: Option[String]): Changelog =
    ChangelogFile.read(files, changelogPath(version, idInName))

  def writeSegment(header: ChangelogHeader, k: Int, changes: Iterator[ChangeRecord]): Long = {
    ensureRoot()
    ChangelogFile.write(files, segmentPath(header.version, header.checkpointId, k), header, changes)
  }

  def readSegment(version: Long, checkpointId: String, k: Int): Changelog =
    ChangelogFile.read(files, segmentPath(version, checkpointId, k))

  /**
   * Every change of a version: its early-commit segments in order, then its changelog's own records.
   * The changelog is read and verified now, before the caller writes anything; each segment when
   * the iteration reaches it, so a large early-committed version never sits in memory whole.
   */
  def readVersionChanges(header: ChangelogHeader, idInName: Option[String]): Iterator[ChangeRecord] = {
    val own = readChangelog(header.version, idInName).records
    readSegments(header.version, header.checkpointId, header.segments) ++ own
  }

  /** The records of segments 1 to `count` of a version's commit attempt, each read when reached. */
  def readSegments(version: Long, checkpointId: String, count: Int): Iterator[ChangeRecord] =
    (1 to count).iterator.flatMap(k => readSegment(version, checkpointId, k).records)

  def readChangelogHeader(version: Long, idInName: Option[String]): ChangelogHeader =
    ChangelogFile.readHeader(files, changelogPath(version, idInName))

  def changelogs(): Seq[CheckpointEntry] = entries(".txlog")
  def segments(): Seq[CheckpointEntry] = entries(".txseg")
  /** txstate's manifests: always named with a checkpoint id (Spark's HDFS provider's `<version>.snapshot` is not ours). */
  def snapshots(): Seq[CheckpointEntry] =
    (entries(SnapshotNames.writtenSuffix) ++ entries(SnapshotNames.besideHdfsSuffix)).filter(_.id.isDefined)

  def writeManifest(manifest: SnapshotManifest): Unit =
    SnapshotManifest.write(files, snapshotPath(manifest.version, manifest.checkpointId), manifest)

  def readManifest(version: Long, checkpointId: String): SnapshotManifest = {
    val written = snapshotPath(version, checkpointId)
    val renamed = new Path(root, SnapshotNames.besideHdfs(version, checkpointId))
    SnapshotManifest.read(files, if (!files.exists(written) && files.exists(renamed)) renamed else written)
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
      val copied = try copyCounting(in, target) finally in.close()
      target.close()
      copied
    } catch {
      case e: Throwable =>
        target.cancel()
        throw e
    }
  }

  /** Copies `sst/<file.storedName>` to `target`, verifying its size and CRC32C. */
  def download(file: SnapshotFile, target: File): Unit = {
    val source = new Path(sstDir, file.storedName)
    val in =
      try files.open(source)
      catch { case e: java.io.FileNotFoundException => throw CheckpointErrors.corruptSnapshot(source, "it is missing", e) }
    val (size, crc) =
      try {
        val out = new FileOutputStream(target)
        try copyCounting(in, out) finally out.close()
      } finally in.close()
    if (size != file.size || crc != file.crc32c) {
      throw CheckpointErrors.corruptSnapshot(source,
        s"expected ${file.size} bytes with CRC32C ${file.crc32c}, found $size bytes with CRC32C $crc")
    }
  }

  def storedFiles(): Seq[FileStatus] =
    if (files.exists(sstDir)) files.list(sstDir).toSeq else Seq.empty

  /**
   * Temporary files (`.<name>.<random>.tmp`) older than `cutoffMs`: what writers killed between
   * writing and renaming left behind. Live writers rename theirs within seconds.
   */
  def staleTemporaryFiles(cutoffMs: Long): Seq[Path] = {
    val temporary: PathFilter = (p: Path) => p.getName.startsWith(".") && p.getName.endsWith(".tmp")
    Seq(root, sstDir).filter(files.exists).flatMap(dir => files.list(dir, temporary).toSeq)
      .filter(_.getModificationTime < cutoffMs).map(_.getPath)
  }

  def delete(path: Path): Unit = files.delete(path)

  /** Copies `in` to `out`; returns the bytes copied and their CRC32C. */
  private def copyCounting(in: InputStream, out: OutputStream): (Long, Long) = {
    val crc = new CRC32C
    val buffer = new Array[Byte](1 << 16)
    var size = 0L
    var n = in.read(buffer)
    while (n >= 0) {
      crc.update(buffer, 0, n)
      out.write(buffer, 0, n)
      size += n
      n = in.read(buffer)
    }
    (size, crc.getValue)
  }

  def close(): Unit = txstate.compat.closeCheckpointFiles(files)

  private def entries(suffix: String): Seq[CheckpointEntry] = {
    if (!files.exists(root)) Seq.empty
    else {
      val filter: PathFilter = (p: Path) => p.getName.endsWith(suffix)
      files.list(root, filter).toSeq.flatMap { status =>
        val stem = status.getPath.getName.stripSuffix(suffix)
        // `<version>_<id>`, or `<version>.<id>` for a manifest renamed by migrate (SnapshotNames).
        val (versionText, id) = stem.indexWhere(c => c == '_' || c == '.') match {
          case -1 => (stem, None)
          case i => (stem.substring(0, i), Some(stem.substring(i + 1)))
        }
        versionText.toLongOption.map(v => CheckpointEntry(v, id, status.getPath, status.getModificationTime))
      }
    }
  }
}
