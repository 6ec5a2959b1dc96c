package txstate.operate

import scala.util.matching.Regex

import org.apache.hadoop.fs.FileStatus

/** Bytes of one store partition on the checkpoint, by what the files are. */
final case class FileBytes(snapshots: Long, sharedFiles: Long, changelogs: Long, other: Long, files: Int) {
  def total: Long = snapshots + sharedFiles + changelogs + other
}

/** A file that holds one version: a snapshot of it, or the changes that made it. */
final case class VersionFile(version: Long, snapshot: Boolean)

/**
 * What each provider's files are, by name: txstate's changelogs, segments, manifests and `sst/`
 * (docs/ARCHITECTURE.md, "Files in a checkpoint"), Spark's RocksDB provider's `<v>.changelog`,
 * `<v>.zip` and `SSTs/`, Spark's HDFS provider's `<v>.delta` and `<v>.snapshot` (each with
 * `_<id>` under checkpoint format v2). Names are all inspect reads of Spark's providers.
 */
object StoreFileKinds {
  private final case class Names(changelog: Seq[Regex], snapshot: Seq[Regex], sharedDir: Option[String])

  private val byKind: Map[String, Names] = Map(
    ProviderKind.txstate -> Names(Seq("""(\d+)(?:_[^.]+)?\.txlog""".r, """(\d+)_.+-\d+\.txseg""".r),
      Seq("""(\d+)_[^.]+\.snapshot""".r, """(\d+)\..+\.txsnapshot""".r), Some("sst")),
    ProviderKind.rocksdb -> Names(Seq("""(\d+)(?:_[^.]+)?\.changelog""".r), Seq("""(\d+)(?:_[^.]+)?\.zip""".r),
      Some("SSTs")),
    ProviderKind.hdfs -> Names(Seq("""(\d+)(?:_[^.]+)?\.delta""".r), Seq("""(\d+)(?:_[^.]+)?\.snapshot""".r), None))

  def known(kind: String): Boolean = byKind.contains(kind)

  def versionFile(kind: String, status: FileStatus): Option[VersionFile] = byKind.get(kind).flatMap { names =>
    val name = status.getPath.getName
    def first(patterns: Seq[Regex]) = patterns.iterator.flatMap(_.unapplySeq(name)).map(_.head.toLong).toSeq.headOption
    first(names.changelog).map(VersionFile(_, snapshot = false))
      .orElse(first(names.snapshot).map(VersionFile(_, snapshot = true)))
  }

  def bytes(kind: String, files: Seq[FileStatus]): FileBytes = {
    val sharedDir = byKind.get(kind).flatMap(_.sharedDir)
    files.foldLeft(FileBytes(0, 0, 0, 0, 0)) { (sum, status) =>
      val size = status.getLen
      val counted = sum.copy(files = sum.files + 1)
      if (sharedDir.contains(status.getPath.getParent.getName)) counted.copy(sharedFiles = sum.sharedFiles + size)
      else versionFile(kind, status) match {
        case Some(VersionFile(_, true)) => counted.copy(snapshots = sum.snapshots + size)
        case Some(VersionFile(_, false)) => counted.copy(changelogs = sum.changelogs + size)
        case None => counted.copy(other = sum.other + size)
      }
    }
  }
}
