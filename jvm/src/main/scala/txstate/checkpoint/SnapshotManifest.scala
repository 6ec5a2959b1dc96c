package txstate.checkpoint

import java.io.{DataInputStream, EOFException}
import java.nio.charset.StandardCharsets.US_ASCII

import org.apache.hadoop.fs.Path

import txstate.compat.CheckpointFileManager

/**
 * One file of a snapshot: the RocksDB file name inside the checkpoint directory, the shared
 * checkpoint file holding its bytes (SST files are shared by every snapshot that contains them),
 * its size and CRC32C.
 */
final case class SnapshotFile(localName: String, storedName: String, size: Long, crc32c: Long)

/**
 * A snapshot of one version: which RocksDB files make it up and which commit point they hold.
 * `checkpointId` ties it to a lineage exactly as the changelog of the same version does.
 */
final case class SnapshotManifest(
    version: Long,
    checkpointId: String,
    numKeys: Long,
    commitTimeMs: Long,
    files: Seq[SnapshotFile])

/** `<version>_<checkpointId>.snapshot`: a manifest in a [[FramedFile]]. */
object SnapshotManifest {
  val magic: Array[Byte] = "TXSN".getBytes(US_ASCII)
  val formatVersion = 1

  def write(files: CheckpointFileManager, path: Path, manifest: SnapshotManifest): Unit =
    FramedFile.write(files, path, magic, formatVersion) { out =>
      out.writeLong(manifest.version)
      out.writeUTF(manifest.checkpointId)
      out.writeLong(manifest.numKeys)
      out.writeLong(manifest.commitTimeMs)
      out.writeInt(manifest.files.size)
      manifest.files.foreach { f =>
        out.writeUTF(f.localName)
        out.writeUTF(f.storedName)
        out.writeLong(f.size)
        out.writeLong(f.crc32c)
      }
    }

  def read(files: CheckpointReads, path: Path): SnapshotManifest = {
    val bytes = FramedFile.readAll(files, path)(CheckpointErrors.corruptSnapshot(path, "the manifest is missing", _))
    val (_, in) = FramedFile.open(bytes, magic, Seq(formatVersion), "snapshot manifest", path)(
      CheckpointErrors.corruptSnapshot(path, _))
    try readBody(in)
    catch { case e: EOFException => throw CheckpointErrors.corruptSnapshot(path, "it is truncated", e) }
  }

  private def readBody(in: DataInputStream): SnapshotManifest = {
    val version = in.readLong()
    val id = in.readUTF()
    val numKeys = in.readLong()
    val time = in.readLong()
    val count = in.readInt()
    val entries = (0 until count).map(_ => SnapshotFile(in.readUTF(), in.readUTF(), in.readLong(), in.readLong()))
    SnapshotManifest(version, id, numKeys, time, entries)
  }
}
