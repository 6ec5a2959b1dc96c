package txstate.checkpoint

import java.io.{BufferedOutputStream, ByteArrayInputStream, DataInputStream, DataOutputStream, OutputStream}
import java.security.{DigestOutputStream, MessageDigest}
import java.util.zip.CheckedOutputStream

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{Path, PositionedReadable}

import txstate.compat.{CheckpointFileManager, JavaLibrary}

/**
 * The frame every txstate checkpoint file shares: four magic bytes, a format version, the body,
 * and a CRC32C of everything before it in the last four bytes. One check for all of them, so a
 * damaged file of any kind is reported the same way.
 */
private[checkpoint] object FramedFile {
  private val checksumBytes = 4
  private val headerBytes = 4 + 4 // magic and format version

  /**
   * Writes a frame atomically through Spark's CheckpointFileManager (rename or object-store put),
   * so it is never seen half-written under its final name; on failure nothing appears at `path`.
   * Returns the bytes written; `digest`, when given, sees every one of them.
   */
  def write(files: CheckpointFileManager, path: Path, magic: Array[Byte], formatVersion: Int,
      digest: Option[MessageDigest] = None)(body: DataOutputStream => Unit): Long = {
    val target = files.createAtomic(path, true)
    try {
      val crc = JavaLibrary.newCrc32c()
      val sink: OutputStream = digest.fold[OutputStream](target)(new DigestOutputStream(target, _))
      val raw = new BufferedOutputStream(sink, 1 << 16)
      val out = new DataOutputStream(new CheckedOutputStream(raw, crc))
      out.write(magic)
      out.writeInt(formatVersion)
      body(out)
      out.flush()
      val size = out.size().toLong + checksumBytes
      new DataOutputStream(raw).writeInt(crc.getValue.toInt)
      raw.flush()
      target.close()
      size
    } catch {
      case NonFatal(e) =>
        try target.cancel() catch { case NonFatal(c) => e.addSuppressed(c) }
        e match {
          case damaged: CheckpointFileException => throw damaged
          case io: java.io.IOException => throw CheckpointErrors.writeFailed(path, io)
          case other => throw other
        }
    }
  }

  /** The whole file at `path`; `missing` builds the caller's typed error when there is none. */
  def readAll(files: CheckpointReads, path: Path)(missing: java.io.FileNotFoundException => Throwable): Array[Byte] =
    try {
      val in = files.open(path)
      try JavaLibrary.readAllBytes(in) finally in.close()
    } catch {
      case e: java.io.FileNotFoundException => throw missing(e)
    }

  /**
   * At most the first `max` bytes of `in` (fewer for a shorter file). A stream that can read at a
   * position (HDFS, S3A) is asked for exactly that range: from a sequential read a DataNode
   * streams the block to its end, the whole changelog, though a header check needs a few hundred
   * bytes, once per batch (docs/ARCHITECTURE.md, "Load paths").
   */
  def readPrefix(in: java.io.InputStream, max: Int): Array[Byte] = {
    val buffer = new Array[Byte](max)
    var filled = 0
    var more = true
    while (more && filled < max) {
      val n = in match {
        case positioned: PositionedReadable => positioned.read(filled.toLong, buffer, filled, max - filled)
        case sequential => sequential.read(buffer, filled, max - filled)
      }
      if (n < 0) more = false else filled += n
    }
    java.util.Arrays.copyOf(buffer, filled)
  }

  /**
   * Verifies `bytes` as a frame of `magic` in one of `formats` and returns the format found and a
   * stream over its body (after the format version, before the checksum). `corrupt` builds the
   * caller's typed error.
   */
  def open(bytes: Array[Byte], magic: Array[Byte], formats: Seq[Int], kind: String, path: Path)
      (corrupt: String => Throwable): (Int, DataInputStream) = {
    if (bytes.length < headerBytes + checksumBytes) {
      throw corrupt(s"it is ${bytes.length} bytes long, too short to be a $kind")
    }
    if (!startsWithMagic(bytes, magic)) throw corrupt(s"it does not start with the txstate $kind magic bytes")
    val crc = JavaLibrary.newCrc32c()
    crc.update(bytes, 0, bytes.length - checksumBytes)
    val stored = java.nio.ByteBuffer.wrap(bytes, bytes.length - checksumBytes, checksumBytes).getInt
    if (stored != crc.getValue.toInt) throw corrupt("its CRC32C checksum does not match its content")
    val in = new DataInputStream(new ByteArrayInputStream(bytes, magic.length, bytes.length - magic.length - checksumBytes))
    (checkFormat(in.readInt(), formats, kind, path, corrupt), in)
  }

  /**
   * Checks the magic and format at the start of a stream (header-only reads that skip the
   * checksum); returns the format found.
   */
  def openHeader(in: DataInputStream, magic: Array[Byte], formats: Seq[Int], kind: String, path: Path)
      (corrupt: String => Throwable): Int = {
    val found = new Array[Byte](magic.length)
    in.readFully(found)
    if (!startsWithMagic(found, magic)) throw corrupt(s"it does not start with the txstate $kind magic bytes")
    checkFormat(in.readInt(), formats, kind, path, corrupt)
  }

  private def checkFormat(found: Int, readable: Seq[Int], kind: String, path: Path, corrupt: String => Throwable): Int =
    if (readable.contains(found)) found
    else if (found > readable.max) throw CheckpointErrors.newerFormat(path, kind, found, readable)
    else throw corrupt(s"it has $kind format $found; this build reads format ${NewerFormatException.list(readable)}")

  private def startsWithMagic(bytes: Array[Byte], magic: Array[Byte]): Boolean =
    bytes.length >= magic.length && java.util.Arrays.equals(java.util.Arrays.copyOf(bytes, magic.length), magic)
}
