package txstate.checkpoint

import java.nio.file.{Files, Paths}
import java.nio.file.attribute.BasicFileAttributes
import java.security.MessageDigest
import java.util.Locale
import java.util.concurrent.TimeUnit

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{EtagSource, FileSystem, Path}

/**
 * How the file system under one store's checkpoint lets its writer recognize a file it wrote from
 * the file's status alone: one metadata request (an S3 HEAD), or a local stat, instead of reading
 * the file (docs/ARCHITECTURE.md, "What a load reads"). Where it cannot (HDFS: its status names no
 * content), nothing is recognized and the caller reads the file as before.
 */
private[checkpoint] sealed trait FileIdentities {
  /** A digest to compute over the bytes as they are written, when this file system's identity needs one. */
  def newDigest(): Option[MessageDigest]

  /** The identity of the file just written at `path` (`bytes` long, `digest` over them). */
  def of(path: Path, bytes: Long, digest: Option[MessageDigest]): Option[FileIdentity]

  /**
   * True only when the file at `path` is certainly the one `identity` was taken of. Any doubt
   * (missing, another tag, an error asking) is false: the caller then reads the file.
   */
  def unchanged(path: Path, identity: FileIdentity): Boolean
}

private[checkpoint] object FileIdentities {
  // Hadoop's CommonPathCapabilities.ETAGS_AVAILABLE, by value: S3A and ABFS declare it.
  private val etagsAvailable = "fs.capability.etags.available"

  /** What the file system holding `root` offers; `local` when its files are written by [[LocalCheckpointFileManager]]. */
  def forLocation(root: Path, hadoopConf: Configuration, local: Boolean): FileIdentities =
    if (local) LocalDisk
    else {
      val fs = root.getFileSystem(hadoopConf)
      if (Try(fs.hasPathCapability(root, etagsAvailable)).getOrElse(false)) new EntityTags(fs) else Unrecognized
    }

  private object Unrecognized extends FileIdentities {
    def newDigest(): Option[MessageDigest] = None
    def of(path: Path, bytes: Long, digest: Option[MessageDigest]): Option[FileIdentity] = None
    def unchanged(path: Path, identity: FileIdentity): Boolean = false
  }

  private final class EntityTags(fs: FileSystem) extends FileIdentities {
    def newDigest(): Option[MessageDigest] = Some(MessageDigest.getInstance("MD5"))

    def of(path: Path, bytes: Long, digest: Option[MessageDigest]): Option[FileIdentity] =
      digest.map(d => FileIdentity.ContentMd5(bytes, d.digest().map(b => f"${b & 0xff}%02x").mkString))

    def unchanged(path: Path, identity: FileIdentity): Boolean = identity match {
      case FileIdentity.ContentMd5(size, md5) =>
        try fs.getFileStatus(path) match {
          case tagged: EtagSource =>
            tagged.getLen == size && Option(tagged.getEtag).exists(_.stripPrefix("\"").stripSuffix("\"")
              .toLowerCase(Locale.ROOT) == md5)
          case _ => false
        } catch { case NonFatal(_) => false }
      case _ => false
    }
  }

  private object LocalDisk extends FileIdentities {
    def newDigest(): Option[MessageDigest] = None

    def of(path: Path, bytes: Long, digest: Option[MessageDigest]): Option[FileIdentity] = stat(path)

    def unchanged(path: Path, identity: FileIdentity): Boolean = stat(path).contains(identity)

    private def stat(path: Path): Option[FileIdentity] =
      try {
        val attributes = Files.readAttributes(Paths.get(path.toUri.getPath), classOf[BasicFileAttributes])
        Option(attributes.fileKey).map(key =>
          FileIdentity.LocalFile(key.toString, attributes.size, attributes.lastModifiedTime.to(TimeUnit.NANOSECONDS)))
      } catch { case NonFatal(_) => None }
  }
}
