package txstate.checkpoint

import org.apache.hadoop.fs.Path

/**
 * A changelog as this process wrote it: its header, its path and size, and, where the file system
 * offers one, what recognizes the file later from its status alone ([[FileIdentity]]). The writer
 * keeps the newest in memory so that loading the version it just committed needs no read of the
 * header back (docs/ARCHITECTURE.md, "What a load reads").
 */
final case class WrittenChangelog(header: ChangelogHeader, path: Path, bytes: Long, identity: Option[FileIdentity])

/** What tells, from a file's status alone, that the file at a path still holds the bytes this process wrote there. */
sealed trait FileIdentity

object FileIdentity {
  /**
   * On a store whose entity tag is the MD5 of an object's bytes (S3 after a single-part PUT or a
   * copy of one, which is how a changelog is written and renamed): an equal tag means equal bytes,
   * so the header in them is ours. Any other tag (a multipart upload, server-side encryption with
   * KMS) just does not match, and the header is read as if nothing were known.
   */
  final case class ContentMd5(size: Long, md5Hex: String) extends FileIdentity

  /**
   * On a local disk: the file key (device and inode), size and modification time. Every writer
   * replaces a changelog by renaming a new file over it, and that file existed before ours went, so
   * it has another inode.
   */
  final case class LocalFile(fileKey: String, size: Long, modifiedNanos: Long) extends FileIdentity
}
