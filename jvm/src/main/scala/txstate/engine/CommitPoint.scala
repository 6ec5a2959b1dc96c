package txstate.engine

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}

/**
 * What a local database holds, written in the same atomic RocksDB write as the data it describes
 * (KIP-892's changelog offset, here Spark's state version).
 *
 * @param version          Spark state version (0 = empty store)
 * @param checkpointId     the id of the commit that wrote this version (its changelog's id; in file names under
 *                         checkpoint format v2); None for an empty store
 * @param formatVersion    storage format of the keys and values in the database (KIP-258: 1 plain, 2 stamped)
 * @param commitTimeMs     wall-clock time of the commit
 * @param numKeys          exact number of live user keys at this version
 * @param stamp            the batch that made this version and its timestamp (unknown under format 1)
 * @param timeIndexSinceMs set while TTL is on: the batch time TTL was switched on at, which rows of
 *                         unknown time count as their write time; the TTL index is kept while set
 * @param writtenBy        the txstate-spark release that wrote this version
 */
final case class CommitPoint(
    version: Long,
    checkpointId: Option[String],
    formatVersion: Int,
    commitTimeMs: Long,
    numKeys: Long,
    stamp: WriteStamp = WriteStamp.unknown,
    timeIndexSinceMs: Option[Long] = None,
    writtenBy: String = Release.writer) {

  def toBytes: Array[Byte] = {
    val bytes = new ByteArrayOutputStream(96)
    val out = new DataOutputStream(bytes)
    out.writeInt(CommitPoint.encodingVersion)
    out.writeLong(version)
    out.writeBoolean(checkpointId.isDefined)
    checkpointId.foreach(out.writeUTF)
    out.writeInt(formatVersion)
    out.writeLong(commitTimeMs)
    out.writeLong(numKeys)
    out.writeLong(stamp.batchId)
    out.writeLong(stamp.timeMs)
    out.writeLong(timeIndexSinceMs.getOrElse(-1L))
    out.writeUTF(writtenBy)
    out.flush()
    bytes.toByteArray
  }
}

object CommitPoint {
  /** The storage format this build writes (KIP-258: the format travels with the commit point). */
  val currentFormatVersion: Int = 2
  /** The formats this build reads: format 1 stores are upgraded in place as rows are rewritten. */
  val readableFormatVersions: Seq[Int] = Seq(1, 2)
  /** What wrote a commit point of encoding 1, which did not record it. */
  val firstRelease = "0.1.0"
  // Encoding 1 (0.1.0): up to numKeys. Encoding 2 adds the stamp, the TTL index and the writer.
  private val encodingVersion = 2

  val empty: CommitPoint = CommitPoint(0L, None, currentFormatVersion, 0L, 0L)

  def fromBytes(bytes: Array[Byte]): CommitPoint = {
    val in = new DataInputStream(new ByteArrayInputStream(bytes))
    val encoding = in.readInt()
    if (encoding < 1 || encoding > encodingVersion) throw EngineErrors.unknownCommitPointEncoding(encoding, encodingVersion)
    val version = in.readLong()
    val checkpointId = if (in.readBoolean()) Some(in.readUTF()) else None
    val base = CommitPoint(version, checkpointId, in.readInt(), in.readLong(), in.readLong(), writtenBy = firstRelease)
    if (encoding == 1) base
    else {
      val stamp = WriteStamp(in.readLong(), in.readLong())
      val since = Some(in.readLong()).filter(_ >= 0)
      base.copy(stamp = stamp, timeIndexSinceMs = since, writtenBy = in.readUTF())
    }
  }
}
