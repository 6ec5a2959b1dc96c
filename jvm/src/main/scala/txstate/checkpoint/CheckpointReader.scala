package txstate.checkpoint

import java.io.{File, FileOutputStream, InputStream, OutputStream}

import scala.util.Try

import org.apache.hadoop.fs.{FileStatus, Path, PathFilter}

import txstate.compat.JavaLibrary
import txstate.engine.ChangeRecord

/** A changelog or snapshot manifest found in the checkpoint: its version, id (if named) and path. */
final case class CheckpointEntry(version: Long, id: Option[String], path: Path, modifiedMs: Long)

/**
 * One listing of a store instance's directory: its changelogs, early-commit segments and txstate's
 * snapshot manifests as they were at one moment. A reader that looks at them several times in one
 * pass (verify) takes one listing instead of a LIST request per look.
 */
final case class CheckpointListing(changelogs: Seq[CheckpointEntry], segments: Seq[CheckpointEntry],
    snapshots: Seq[CheckpointEntry]) {
  /** The snapshots as (version, checkpoint id): what a lineage walk may stop at. */
  def snapshotIds: Set[(Long, String)] = snapshots.flatMap(e => e.id.map(id => (e.version, id))).toSet

  /** The file names listed: two listings with the same names saw the same files. */
  def names: Set[String] = (changelogs ++ segments ++ snapshots).map(_.path.getName).toSet
}

/**
 * Reading the durable files of one store instance, in Spark's per-instance state directory
 * (docs/ARCHITECTURE.md, "Files in a checkpoint"):
 * - `<version>.txlog` (checkpoint format v1) or `<version>_<checkpointId>.txlog` (format v2);
 * - `<version>_<checkpointId>-<k>.txseg`: the k-th early-commit segment of an open version;
 * - `<version>_<checkpointId>.snapshot`: a snapshot manifest (or `<version>.<checkpointId>.txsnapshot`
 *   beside Spark's HDFS provider, see [[SnapshotNames]]);
 * - `sst/<uuid>-<rocksdb file name>`: RocksDB files, shared by every snapshot that contains them;
 * - `cleanup.retention.txstate`: the retention of the last cleanup that deleted versions ([[RetentionRecord]]).
 *
 * It holds only [[CheckpointReads]]: followers use it over a [[ReadOnlyFileSystem]], and
 * [[StoreCheckpoint]] adds the writes. `idInName` parameters are the checkpoint id as it appears
 * in a changelog's file name: Some under checkpoint format v2, None under v1.
 */
class CheckpointReader(val root: Path, reads: CheckpointReads) {
  import CheckpointReader.{changelogSuffix, segmentSuffix, snapshotSuffixes}

  protected val sstDir = new Path(root, "sst")

  def changelogPath(version: Long, idInName: Option[String]): Path =
    new Path(root, idInName.fold(s"$version.txlog")(id => s"${version}_$id.txlog"))

  /** The k-th early-commit segment (k from 1) of the open version's commit attempt `checkpointId`. */
  def segmentPath(version: Long, checkpointId: String, k: Int): Path = new Path(root, s"${version}_$checkpointId-$k.txseg")

  def snapshotPath(version: Long, checkpointId: String): Path = new Path(root, SnapshotNames.written(version, checkpointId))

  def retentionPath: Path = new Path(root, RetentionRecord.fileName)

  /** The minBatchesToRetain the last cleanup that deleted versions ran with; None before any did. */
  def recordedRetention(): Option[Int] =
    if (reads.exists(retentionPath)) Some(RetentionRecord.read(reads, retentionPath)) else None

  def readChangelog(version: Long, idInName: Option[String]): Changelog = {
    val path = changelogPath(version, idInName)
    val changelog = ChangelogFile.read(reads, path)
    val h = changelog.header
    if (h.version != version) {
      throw CheckpointErrors.corruptChangelog(path, s"its header says version ${h.version}: another version's file " +
        "is in its place")
    }
    changelog
  }

  /**
   * Segment `k` of attempt `checkpointId` of `version`. Its header must say exactly that: a segment
   * file of the same attempt in another's place (a stale copy put back) is valid in every other way,
   * and replaying it would silently give wrong state.
   */
  def readSegment(version: Long, checkpointId: String, k: Int): Changelog = {
    val path = segmentPath(version, checkpointId, k)
    val segment = ChangelogFile.read(reads, path)
    val h = segment.header
    if (h.version != version || h.checkpointId != checkpointId || h.segments != k) {
      throw CheckpointErrors.corruptChangelog(path, s"its header says segment ${h.segments} of version ${h.version} " +
        s"(${h.checkpointId}), not segment $k of version $version ($checkpointId): another segment is in its place")
    }
    segment
  }

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
    ChangelogFile.readHeader(reads, changelogPath(version, idInName))

  def changelogs(): Seq[CheckpointEntry] = entries(Seq(changelogSuffix)).map(_._2)
  def segments(): Seq[CheckpointEntry] = entries(Seq(segmentSuffix)).map(_._2)
  /** txstate's manifests: always named with a checkpoint id (Spark's HDFS provider's `<version>.snapshot` is not ours). */
  def snapshots(): Seq[CheckpointEntry] = ofSnapshots(entries(snapshotSuffixes))

  /** The snapshots as (version, checkpoint id): what a lineage walk may stop at. */
  def snapshotIds(): Set[(Long, String)] = CheckpointListing(Nil, Nil, snapshots()).snapshotIds

  /** Changelogs, segments and snapshots in one LIST request. */
  def listing(): CheckpointListing = {
    val all = entries(changelogSuffix +: segmentSuffix +: snapshotSuffixes)
    def of(suffix: String) = all.collect { case (`suffix`, e) => e }
    CheckpointListing(of(changelogSuffix), of(segmentSuffix), ofSnapshots(all))
  }

  def readManifest(version: Long, checkpointId: String): SnapshotManifest = {
    val written = snapshotPath(version, checkpointId)
    val renamed = new Path(root, SnapshotNames.besideHdfs(version, checkpointId))
    val path = if (!reads.exists(written) && reads.exists(renamed)) renamed else written
    val manifest = SnapshotManifest.read(reads, path)
    // Another version's manifest in this one's place is a valid file: restoring it and replaying the
    // changelogs above this version would silently skip the versions in between.
    if (manifest.version != version || manifest.checkpointId != checkpointId) {
      throw CheckpointErrors.corruptSnapshot(path, s"it describes version ${manifest.version} " +
        s"(${manifest.checkpointId}), not version $version ($checkpointId) as its name says")
    }
    manifest
  }

  /** Copies `sst/<file.storedName>` to `target`, verifying its size and CRC32C. */
  def download(file: SnapshotFile, target: File): Unit = {
    val out = new FileOutputStream(target)
    try copyVerified(file, out) finally out.close()
  }

  /** Reads `sst/<file.storedName>` whole and verifies its size and CRC32C, keeping nothing (`verify`). */
  def verifyStored(file: SnapshotFile): Unit = copyVerified(file, CheckpointReader.discard)

  private def copyVerified(file: SnapshotFile, out: OutputStream): Unit = {
    val source = new Path(sstDir, file.storedName)
    val in =
      try reads.open(source)
      catch { case e: java.io.FileNotFoundException => throw CheckpointErrors.corruptSnapshot(source, "it is missing", e) }
    val (size, crc) =
      try CheckpointReader.copyCounting(in, out)
      finally in.close()
    if (size != file.size || crc != file.crc32c) {
      throw CheckpointErrors.corruptSnapshot(source,
        s"expected ${file.size} bytes with CRC32C ${file.crc32c}, found $size bytes with CRC32C $crc")
    }
  }

  def storedFiles(): Seq[FileStatus] =
    if (reads.exists(sstDir)) reads.list(sstDir, (_: Path) => true) else Seq.empty

  /**
   * Temporary files (`.<name>.<random>.tmp`) older than `cutoffMs`: what writers killed between
   * writing and renaming left behind. Live writers rename theirs within seconds.
   */
  def staleTemporaryFiles(cutoffMs: Long): Seq[Path] = {
    val temporary: PathFilter = (p: Path) => p.getName.startsWith(".") && p.getName.endsWith(".tmp")
    Seq(root, sstDir).filter(reads.exists).flatMap(dir => reads.list(dir, temporary))
      .filter(_.getModificationTime < cutoffMs).map(_.getPath)
  }

  private def ofSnapshots(found: Seq[(String, CheckpointEntry)]): Seq[CheckpointEntry] =
    found.collect { case (suffix, e) if snapshotSuffixes.contains(suffix) && e.id.isDefined => e }

  /** The files of the root directory whose names end with one of `suffixes`, in one listing, each with its suffix. */
  private def entries(suffixes: Seq[String]): Seq[(String, CheckpointEntry)] = {
    if (!reads.exists(root)) Seq.empty
    else {
      val filter: PathFilter = (p: Path) => suffixes.exists(p.getName.endsWith)
      reads.list(root, filter).flatMap { status =>
        val name = status.getPath.getName
        suffixes.find(name.endsWith).flatMap { suffix =>
          val stem = name.stripSuffix(suffix)
          // `<version>_<id>`, or `<version>.<id>` for a manifest renamed by migrate (SnapshotNames).
          val (versionText, id) = stem.indexWhere(c => c == '_' || c == '.') match {
            case -1 => (stem, None)
            case i => (stem.substring(0, i), Some(stem.substring(i + 1)))
          }
          Try(versionText.toLong).toOption.map(v => suffix -> CheckpointEntry(v, id, status.getPath, status.getModificationTime))
        }
      }
    }
  }
}

private[checkpoint] object CheckpointReader {
  val changelogSuffix = ".txlog"
  val segmentSuffix = ".txseg"
  val snapshotSuffixes: Seq[String] = Seq(SnapshotNames.writtenSuffix, SnapshotNames.besideHdfsSuffix)

  /** An output that keeps nothing (Java 8 has no `OutputStream.nullOutputStream`). */
  val discard: OutputStream = new OutputStream {
    def write(b: Int): Unit = ()
    override def write(b: Array[Byte], off: Int, len: Int): Unit = ()
  }

  /** Copies `in` to `out`; returns the bytes copied and their CRC32C. */
  def copyCounting(in: InputStream, out: OutputStream): (Long, Long) = {
    val crc = JavaLibrary.newCrc32c()
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
}
