package txstate.engine

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}

/**
 * What a local database holds, written in the same atomic RocksDB write as the data it describes
 * (KIP-892's changelog offset, here Spark's state version).
 *
 * @param version       Spark state version (0 = empty store)
 * @param checkpointId  the id of the commit that wrote this version (its changelog's id; in file names under
 *                      checkpoint format v2); None for an empty store
 * @param formatVersion storage format of the keys and values in the database
 * @param commitTimeMs  wall-clock time of the commit
 * @param numKeys       exact number of live user keys at this version
 */
final case class CommitPoint(
    version: Long,
    checkpointId: Option[String],
    formatVersion: Int,
    commitTimeMs: Long,
    numKeys: Long) {

  def toBytes: Array[Byte] = {
    val bytes = new ByteArrayOutputStream(64)
    val out = new DataOutputStream(bytes)
    out.writeInt(CommitPoint.encodingVersion)
    out.writeLong(version)
    out.writeBoolean(checkpointId.isDefined)
    checkpointId.foreach(out.writeUTF)
    out.writeInt(formatVersion)
    out.writeLong(commitTimeMs)
    out.writeLong(numKeys)
    out.flush()
    bytes.toByteArray
  }
}

object CommitPoint {
  /** The storage format this build writes (KIP-258: the format travels with the commit point). */
  val currentFormatVersion: Int = 1
  private val encodingVersion = 1

  val empty: CommitPoint = CommitPoint(0L, None, currentFormatVersion, 0L, 0L)

  def fromBytes(bytes: Array[Byte]): CommitPoint = {
    val in = new DataInputStream(new ByteArrayInputStream(bytes))
    val encoding = in.readInt()
    if (encoding != encodingVersion) {
      throw EngineErrors.unknownCommitPointEncoding(encoding, encodingVersion)
    }
    val version = in.readLong()
    val checkpointId = if (in.readBoolean()) Some(in.readUTF()) else None
    CommitPoint(version, checkpointId, in.readInt(), in.readLong(), in.readLong())
  }
}
