package txstate.checkpoint

import java.io.{BufferedOutputStream, ByteArrayInputStream, DataInputStream, DataOutputStream, EOFException, IOException}
import java.nio.charset.StandardCharsets.US_ASCII
import java.util.zip.{CRC32C, CheckedOutputStream}

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

import txstate.engine.ChangeRecord

/**
 * The durable record of one version: self-describing (magic, format version, header), every
 * change in apply order, then an end marker, the record count and a CRC32C of everything before it.
 *
 * Written through Spark's CheckpointFileManager so the file appears atomically (rename or
 * object-store put) and is never seen half-written under its final name.
 */
object ChangelogFile {
  val magic: Array[Byte] = "TXCL".getBytes(US_ASCII)
  val formatVersion: Int = 1

  private val endTag: Byte = 0
  private val putTag: Byte = 1
  private val deleteTag: Byte = 2
  private val deleteRangeTag: Byte = 3

  /** Writes the changelog; returns the bytes written. On failure nothing appears at `path`. */
  def write(files: CheckpointFileManager, path: Path, header: ChangelogHeader, changes: Iterator[ChangeRecord]): Long = {
    val target = files.createAtomic(path, true)
    try {
      val crc = new CRC32C
      val raw = new BufferedOutputStream(target, 1 << 16)
      val checked = new CheckedOutputStream(raw, crc)
      val out = new DataOutputStream(checked)
      out.write(magic)
      out.writeInt(formatVersion)
      out.writeLong(header.version)
      out.writeUTF(header.changelogId)
      out.writeBoolean(header.baseChangelogId.isDefined)
      header.baseChangelogId.foreach(out.writeUTF)
      out.writeLong(header.numKeys)
      out.writeLong(header.commitTimeMs)
      out.writeInt(header.segments)
      var count = 0L
      changes.foreach { change =>
        change match {
          case ChangeRecord.Put(k, v) => out.writeByte(putTag); writeBytes(out, k); writeBytes(out, v)
          case ChangeRecord.Delete(k) => out.writeByte(deleteTag); writeBytes(out, k)
          case ChangeRecord.DeleteRange(from, until) =>
            out.writeByte(deleteRangeTag); writeBytes(out, from); writeBytes(out, until)
        }
        count += 1
      }
      out.writeByte(endTag)
      out.writeLong(count)
      out.flush()
      val checksum = crc.getValue.toInt
      val size = out.size().toLong + 4
      new DataOutputStream(raw).writeInt(checksum)
      raw.flush()
      target.close()
      size
    } catch {
      case NonFatal(e) =>
        target.cancel()
        throw e
    }
  }

  /** Reads and verifies a whole changelog. Any damage raises [[CorruptChangelogException]] naming the file. */
  def read(files: CheckpointFileManager, path: Path): Changelog = {
    val bytes =
      try {
        val in = files.open(path)
        try in.readAllBytes() finally in.close()
      } catch {
        case e: java.io.FileNotFoundException => throw new MissingChangelogException(path, e)
      }
    if (bytes.length < magic.length + 4 + 4) corrupt(path, s"it is ${bytes.length} bytes long, too short to be a changelog")
    if (!java.util.Arrays.equals(bytes, 0, magic.length, magic, 0, magic.length)) {
      corrupt(path, "it does not start with the txstate changelog magic bytes")
    }
    val crc = new CRC32C
    crc.update(bytes, 0, bytes.length - 4)
    val stored = java.nio.ByteBuffer.wrap(bytes, bytes.length - 4, 4).getInt
    if (stored != crc.getValue.toInt) corrupt(path, "its CRC32C checksum does not match its content")

    val in = new DataInputStream(new ByteArrayInputStream(bytes, magic.length, bytes.length - magic.length - 4))
    try {
      val format = in.readInt()
      if (format != formatVersion) {
        corrupt(path, s"it has changelog format $format; this build reads format $formatVersion")
      }
      Changelog(readHeaderFields(in), new RecordIterator(in, path))
    } catch {
      case e: EOFException => corrupt(path, "its header is truncated", e)
      case e: java.io.UTFDataFormatException => corrupt(path, "its header holds a damaged changelog id", e)
    }
  }

  /**
   * Reads just the header, for lineage checks that must not load every record. It is verified
   * again, with the whole file, when the changelog is replayed.
   */
  def readHeader(files: CheckpointFileManager, path: Path): ChangelogHeader = {
    val in =
      try files.open(path)
      catch { case e: java.io.FileNotFoundException => throw new MissingChangelogException(path, e) }
    try {
      val data = new DataInputStream(in)
      val m = new Array[Byte](magic.length)
      data.readFully(m)
      if (!java.util.Arrays.equals(m, magic)) corrupt(path, "it does not start with the txstate changelog magic bytes")
      val format = data.readInt()
      if (format != formatVersion) corrupt(path, s"it has changelog format $format; this build reads format $formatVersion")
      readHeaderFields(data)
    } catch {
      case e: EOFException => corrupt(path, "its header is truncated", e)
      case e: java.io.UTFDataFormatException => corrupt(path, "its header holds a damaged changelog id", e)
    } finally in.close()
  }

  private def readHeaderFields(in: DataInputStream): ChangelogHeader =
    ChangelogHeader(
      version = in.readLong(),
      changelogId = in.readUTF(),
      baseChangelogId = if (in.readBoolean()) Some(in.readUTF()) else None,
      numKeys = in.readLong(),
      commitTimeMs = in.readLong(),
      segments = in.readInt())

  private final class RecordIterator(in: DataInputStream, path: Path) extends Iterator[ChangeRecord] {
    private var pending: Option[ChangeRecord] = None
    private var finished = false
    private var count = 0L

    def hasNext: Boolean = {
      if (pending.isEmpty && !finished) pending = readNext()
      pending.isDefined
    }

    def next(): ChangeRecord = {
      if (!hasNext) throw new NoSuchElementException(s"txstate: no more records in changelog $path")
      val r = pending.get
      pending = None
      r
    }

    private def readNext(): Option[ChangeRecord] =
      try {
        in.readByte() match {
          case `endTag` =>
            val expected = in.readLong()
            if (expected != count) corrupt(path, s"it holds $count records but its trailer says $expected")
            finished = true
            None
          case tag =>
            count += 1
            Some(tag match {
              case `putTag` => ChangeRecord.Put(readBytes(in), readBytes(in))
              case `deleteTag` => ChangeRecord.Delete(readBytes(in))
              case `deleteRangeTag` => ChangeRecord.DeleteRange(readBytes(in), readBytes(in))
              case other => corrupt(path, s"record $count has the unknown tag $other")
            })
        }
      } catch {
        case e: EOFException => corrupt(path, s"it ends inside record ${count + 1}", e)
      }
  }

  private def writeBytes(out: DataOutputStream, b: Array[Byte]): Unit = {
    out.writeInt(b.length)
    out.write(b)
  }

  private def readBytes(in: DataInputStream): Array[Byte] = {
    val n = in.readInt()
    if (n < 0) throw new IOException(s"negative length $n")
    val b = new Array[Byte](n)
    in.readFully(b)
    b
  }

  private def corrupt(path: Path, why: String, cause: Throwable = null): Nothing =
    throw new CorruptChangelogException(path, why, cause)
}

/** A changelog's header and its verified records (the whole file was checksummed when read). */
final case class Changelog(header: ChangelogHeader, records: Iterator[ChangeRecord])

final class CorruptChangelogException(val path: Path, why: String, cause: Throwable)
    extends IOException(
      s"txstate: the changelog $path is corrupt: $why. The state of this version cannot be rebuilt " +
        "from it; restore the file from a backup or restart the query from a new checkpoint.", cause)

final class MissingChangelogException(val path: Path, cause: Throwable)
    extends IOException(
      s"txstate: the changelog $path is missing. The checkpoint lacks a version that must be replayed; " +
        "it may have been deleted by hand or by a cleanup with a smaller minBatchesToRetain.", cause)
