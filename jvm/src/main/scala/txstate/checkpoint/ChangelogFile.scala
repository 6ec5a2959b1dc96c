package txstate.checkpoint

import java.io.{ByteArrayInputStream, DataInputStream, DataOutputStream, EOFException}
import java.nio.charset.StandardCharsets.US_ASCII
import java.security.MessageDigest

import org.apache.hadoop.fs.Path

import txstate.compat.CheckpointFileManager
import txstate.engine.{ChangeRecord, ChangeSink, ChangeSource, CommitPoint, WriteStamp}

/**
 * The durable record of one version (or one early-commit segment of it), in a [[FramedFile]]: the
 * header, every change in apply order, then an end marker and the record count.
 *
 * Format 2 (written after 0.1.0) puts a codec byte after the header and encodes the records, end
 * marker and count with that codec ([[ChangelogCodec]], LZ4). Format 3 adds the storage fields to
 * the header (storage format, write stamp, TTL index start, writing release; see
 * [[ChangelogHeader]]). Format 1 (0.1.0) stores the records plain; formats 1 and 2 are still read,
 * so checkpoints written before stay usable. The header is never encoded, so lineage checks read
 * it without decoding anything.
 */
object ChangelogFile {
  val magic: Array[Byte] = "TXCL".getBytes(US_ASCII)
  val formatVersion: Int = 3
  private val plainFormat = 1
  private val firstStorageFieldsFormat = 3
  private val readableFormats = Seq(plainFormat, 2, formatVersion)
  private val codec: ChangelogCodec = ChangelogCodec.Lz4
  // Far more than any header this build or an older one writes (two ids and a release name: about
  // 200 bytes), so a header read never reaches the records.
  private val headerPrefixBytes = 4096

  private val endTag: Byte = 0
  private val putTag: Byte = 1
  private val deleteTag: Byte = 2
  private val deleteRangeTag: Byte = 3

  /** Writes the changelog; returns the bytes written. On failure nothing appears at `path`. */
  def write(files: CheckpointFileManager, path: Path, header: ChangelogHeader, changes: ChangeSource,
      digest: Option[MessageDigest] = None): Long =
    FramedFile.write(files, path, magic, formatVersion, digest) { out =>
      out.writeLong(header.version)
      out.writeUTF(header.checkpointId)
      out.writeBoolean(header.baseCheckpointId.isDefined)
      header.baseCheckpointId.foreach(out.writeUTF)
      out.writeLong(header.numKeys)
      out.writeLong(header.commitTimeMs)
      out.writeInt(header.segments)
      out.writeInt(header.storageFormat)
      out.writeLong(header.stamp.batchId)
      out.writeLong(header.stamp.timeMs)
      out.writeLong(header.timeIndexSinceMs.getOrElse(-1L))
      out.writeUTF(header.writtenBy)
      out.writeByte(codec.id)
      val encoder = codec.encoder(out)
      val records = new RecordWriter(new DataOutputStream(encoder))
      changes.sendTo(records)
      records.finish()
      encoder.finish()
    }

  /** Reads and verifies a whole changelog. Any damage raises [[CorruptChangelogException]] naming the file. */
  def read(files: CheckpointReads, path: Path): Changelog = {
    val bytes = FramedFile.readAll(files, path)(CheckpointErrors.missingChangelog(path, _))
    val (format, in) = FramedFile.open(bytes, magic, readableFormats, "changelog", path)(corrupt(path, _))
    val header = readHeader(in, format, path)
    Changelog(header, new RecordIterator(recordsOf(format, in, path), path))
  }

  /** The records' stream: plain in format 1, decoded by the codec the file names in format 2. */
  private def recordsOf(format: Int, in: DataInputStream, path: Path): DataInputStream =
    if (format == plainFormat) in
    else {
      val id = try in.readByte() catch { case e: EOFException => throw corrupt(path, "its header is truncated", e) }
      val codec = ChangelogCodec.byId(id).getOrElse(throw corrupt(path, s"its records use the unknown codec $id " +
        s"(this build reads ${ChangelogCodec.all.map(c => s"${c.id} (${c.name})").mkString(", ")}): it was written " +
        "by a newer txstate-spark, use that version or newer"))
      new DataInputStream(codec.decoder(in))
    }

  /**
   * Reads just the header, for lineage checks that must not load every record. It is verified
   * again, with the whole file, when the changelog is replayed.
   */
  def readHeader(files: CheckpointReads, path: Path): ChangelogHeader = {
    val in =
      try files.openPrefix(path, headerPrefixBytes)
      catch { case e: java.io.FileNotFoundException => throw CheckpointErrors.missingChangelog(path, e) }
    val prefix =
      try FramedFile.readPrefix(in, headerPrefixBytes)
      finally in.close()
    val data = new DataInputStream(new ByteArrayInputStream(prefix))
    val format =
      try FramedFile.openHeader(data, magic, readableFormats, "changelog", path)(corrupt(path, _))
      catch { case e: EOFException => throw corrupt(path, "its header is truncated", e) }
    try readHeader(data, format, path)
    catch {
      // A header read alone is not checked against the file's checksum: before a damaged byte can
      // pass for a newer release's storage format, the whole file is read and verified, which
      // names the damage, or the newer format if the file is sound.
      case newer: NewerFormatException =>
        read(files, path)
        throw newer
    }
  }

  /** The frame format of the changelog at `path` (1 to 3; see the object's comment), from its first bytes. */
  def readFileFormat(files: CheckpointReads, path: Path): Int = {
    val in =
      try files.open(path)
      catch { case e: java.io.FileNotFoundException => throw CheckpointErrors.missingChangelog(path, e) }
    val prefix =
      try FramedFile.readPrefix(in, magic.length + 4)
      finally in.close()
    try FramedFile.openHeader(new DataInputStream(new ByteArrayInputStream(prefix)), magic, readableFormats, "changelog",
      path)(corrupt(path, _))
    catch { case e: EOFException => throw corrupt(path, "its header is truncated", e) }
  }

  private def readHeader(in: DataInputStream, format: Int, path: Path): ChangelogHeader = {
    val header =
      try readHeaderFields(in, format)
      catch {
        case e: EOFException => throw corrupt(path, "its header is truncated", e)
        case e: java.io.UTFDataFormatException => throw corrupt(path, "its header holds a damaged checkpoint id", e)
      }
    if (!CommitPoint.readableFormatVersions.contains(header.storageFormat)) {
      throw CheckpointErrors.newerStorageFormat(path, header.storageFormat, header.writtenBy)
    }
    header
  }

  private def readHeaderFields(in: DataInputStream, format: Int): ChangelogHeader = {
    val header = ChangelogHeader(
      version = in.readLong(),
      checkpointId = in.readUTF(),
      baseCheckpointId = if (in.readBoolean()) Some(in.readUTF()) else None,
      numKeys = in.readLong(),
      commitTimeMs = in.readLong(),
      segments = in.readInt())
    if (format < firstStorageFieldsFormat) {
      header.copy(storageFormat = 1, writtenBy = CommitPoint.firstRelease)
    } else {
      header.copy(storageFormat = in.readInt(), stamp = WriteStamp(in.readLong(), in.readLong()),
        timeIndexSinceMs = Some(in.readLong()).filter(_ >= 0), writtenBy = in.readUTF())
    }
  }

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
            if (expected != count) throw corrupt(path, s"it holds $count records but its trailer says $expected")
            finished = true
            None
          case tag =>
            count += 1
            Some(tag match {
              case `putTag` => ChangeRecord.Put(readBytes(in, path, count), readBytes(in, path, count))
              case `deleteTag` => ChangeRecord.Delete(readBytes(in, path, count))
              case `deleteRangeTag` => ChangeRecord.DeleteRange(readBytes(in, path, count), readBytes(in, path, count))
              case other => throw corrupt(path, s"record $count has the unknown tag $other")
            })
        }
      } catch {
        case e: EOFException => throw corrupt(path, s"it ends inside record ${count + 1}", e)
        // The frame's checksum matched, so this is a codec fault, not damage on disk; still name the file.
        case e @ (_: java.io.IOException | _: net.jpountz.lz4.LZ4Exception) =>
          throw corrupt(path, s"its records cannot be decoded at record ${count + 1}", e)
      }
  }

  /** Writes each change as its tag and length-prefixed byte strings, then the end marker and the count. */
  private final class RecordWriter(out: DataOutputStream) extends ChangeSink {
    private var count = 0L

    def put(key: Array[Byte], keyFrom: Int, keyLength: Int, value: Array[Byte], valueFrom: Int, valueLength: Int): Unit = {
      out.writeByte(putTag)
      bytes(key, keyFrom, keyLength)
      bytes(value, valueFrom, valueLength)
      count += 1
    }

    def delete(key: Array[Byte], keyFrom: Int, keyLength: Int): Unit = {
      out.writeByte(deleteTag)
      bytes(key, keyFrom, keyLength)
      count += 1
    }

    def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
      out.writeByte(deleteRangeTag)
      bytes(from, 0, from.length)
      bytes(until, 0, until.length)
      count += 1
    }

    def finish(): Unit = {
      out.writeByte(endTag)
      out.writeLong(count)
      out.flush()
    }

    private def bytes(b: Array[Byte], from: Int, length: Int): Unit = {
      out.writeInt(length)
      out.write(b, from, length)
    }
  }

  private def readBytes(in: DataInputStream, path: Path, record: Long): Array[Byte] = {
    val n = in.readInt()
    if (n < 0) throw corrupt(path, s"record $record has the negative length $n")
    val b = new Array[Byte](n)
    in.readFully(b)
    b
  }

  private def corrupt(path: Path, why: String, cause: Throwable = null): CorruptChangelogException =
    CheckpointErrors.corruptChangelog(path, why, cause)
}

/** A changelog's header and its verified records (the whole file was checksummed when read). */
final case class Changelog(header: ChangelogHeader, records: Iterator[ChangeRecord])
