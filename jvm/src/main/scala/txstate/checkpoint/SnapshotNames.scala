package txstate.checkpoint

import scala.util.Try

/**
 * The names of snapshot manifests. txstate writes `<version>_<checkpointId>.snapshot`. Spark's HDFS
 * provider, listing its store directory, takes the part before `.snapshot` of every such name as a
 * version, and the part before the dot of every `<a>.<b>` name, so it fails on that name.
 * Migrating a store to it therefore renames txstate's manifests to
 * `<version>.<checkpointId>.txsnapshot`, which it skips and txstate reads as well
 * (docs/ARCHITECTURE.md, "Migration"). Elsewhere txstate keeps writing the first form, which
 * every earlier release reads.
 */
object SnapshotNames {
  val writtenSuffix = ".snapshot"
  val besideHdfsSuffix = ".txsnapshot"

  def written(version: Long, checkpointId: String): String = s"${version}_$checkpointId$writtenSuffix"

  def besideHdfs(version: Long, checkpointId: String): String = s"$version.$checkpointId$besideHdfsSuffix"

  /** The name `fileName` takes beside Spark's HDFS provider, when it is a manifest txstate wrote. */
  def renamedBesideHdfs(fileName: String): Option[String] =
    Some(fileName).filter(_.endsWith(writtenSuffix)).map(_.stripSuffix(writtenSuffix)).flatMap { stem =>
      stem.indexOf('_') match {
        case -1 => None
        case i => Try(stem.substring(0, i).toLong).toOption.map(v => besideHdfs(v, stem.substring(i + 1)))
      }
    }
}
