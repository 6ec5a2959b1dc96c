package txstate.checkpoint

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream, EOFException, IOException}
import java.nio.charset.StandardCharsets.US_ASCII
import java.util.zip.CRC32C

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

/**
 * One file of a snapshot: the RocksDB file name inside the checkpoint directory, the shared
 * checkpoint file holding its bytes (SST files are shared by every snapshot that contains them),
 * its size and CRC32C.
 */
final case class SnapshotFile(localName: String, storedName: String, size: Long, crc32c: Long)

/**
 * A snapshot of one version: which RocksDB files make it up and which commit point they hold.
 * `changelogId` ties it to a lineage exactly as the changelog of the same version does.
 */
final case class SnapshotManifest(
    version: Long,
    changelogId: String,
    numKeys: Long,
    commitTimeMs: Long,
    files: Seq[SnapshotFile]) {
  def totalBytes: Long = files.map(_.size).sum
}

object SnapshotManifest {
  val magic: Array[Byte] = "TXSN".getBytes(US_ASCII)
  val formatVersion = 1

  def write(files: CheckpointFileManager, path: Path, manifest: SnapshotManifest): Unit = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    out.write(magic)
    out.writeInt(formatVersion)
    out.writeLong(manifest.version)
    out.writeUTF(manifest.changelogId)
    out.writeLong(manifest.numKeys)
    out.writeLong(manifest.commitTimeMs)
    out.writeInt(manifest.files.size)
    manifest.files.foreach { f =>
      out.writeUTF(f.localName)
      out.writeUTF(f.storedName)
      out.writeLong(f.size)
      out.writeLong(f.crc32c)
    }
    out.flush()
    val crc = new CRC32C
    crc.update(bytes.toByteArray)
    out.writeInt(crc.getValue.toInt)
    out.flush()
    val target = files.createAtomic(path, true)
    try {
      target.write(bytes.toByteArray)
      target.close()
    } catch {
      case e: Throwable =>
        target.cancel()
        throw e
    }
  }

  def read(files: CheckpointFileManager, path: Path): SnapshotManifest = {
    val bytes = {
      val in = files.open(path)
      try in.readAllBytes() finally in.close()
    }
    def corrupt(why: String): Nothing =
      throw new IOException(s"txstate: the snapshot manifest $path is corrupt: $why")
    if (bytes.length < magic.length + 8) corrupt("it is too short")
    if (!java.util.Arrays.equals(bytes, 0, magic.length, magic, 0, magic.length)) corrupt("wrong magic bytes")
    val crc = new CRC32C
    crc.update(bytes, 0, bytes.length - 4)
    if (java.nio.ByteBuffer.wrap(bytes, bytes.length - 4, 4).getInt != crc.getValue.toInt) corrupt("checksum mismatch")
    val in = new DataInputStream(new ByteArrayInputStream(bytes, magic.length, bytes.length - magic.length - 4))
    try {
      val format = in.readInt()
      if (format != formatVersion) corrupt(s"format $format, this build reads $formatVersion")
      val version = in.readLong()
      val id = in.readUTF()
      val numKeys = in.readLong()
      val time = in.readLong()
      val count = in.readInt()
      val entries = (0 until count).map(_ => SnapshotFile(in.readUTF(), in.readUTF(), in.readLong(), in.readLong()))
      SnapshotManifest(version, id, numKeys, time, entries)
    } catch {
      case _: EOFException => corrupt("it is truncated")
    }
  }
}
