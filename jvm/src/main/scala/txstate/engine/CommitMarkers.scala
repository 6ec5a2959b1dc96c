package txstate.engine

import java.io.File
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import org.rocksdb.{WriteBatch, WriteOptions}

/**
 * The two keys of the `commit` column family, which say what the data beside them is: the commit
 * point (the version the database holds) and the in-flight marker (the version a multi-write
 * sequence, a changelog replay or early commits, is partly through). Each is written in the same
 * atomic write as the data it describes, so the database is never torn, and an open reads them to
 * learn what it holds.
 */
private[engine] object CommitMarkers {
  private val committedKey = "committed".getBytes(UTF_8)
  private val inFlightKey = "in_flight".getBytes(UTF_8)

  /** What a database holds: its commit point (the empty store when new), and the version of an interrupted write. */
  final case class Markers(committed: CommitPoint, inFlight: Option[Long])

  /** The markers of a database just opened; fails when its commit point is unreadable or of a newer format. */
  def read(dir: File, database: LocalDatabase): Markers = {
    val committed = Option(database.db.get(database.commit, committedKey)).map(commitPoint(dir, _)).getOrElse(CommitPoint.empty)
    val inFlight = Option(database.db.get(database.commit, inFlightKey)).map(b => ByteBuffer.wrap(b).getLong)
    Markers(committed, inFlight)
  }

  /** `point` in `last`, the final chunk of the write that makes that version. */
  def putCommitPoint(database: LocalDatabase, last: WriteBatch, point: CommitPoint): Unit =
    last.put(database.commit, committedKey, point.toBytes)

  def putInFlight(database: LocalDatabase, batch: WriteBatch, version: Long): Unit =
    batch.put(database.commit, inFlightKey, versionBytes(version))

  def clearInFlight(database: LocalDatabase, last: WriteBatch): Unit = last.delete(database.commit, inFlightKey)

  /** `point` alone, in a write of its own (a database emptied at a version: no data to go with it). */
  def writeCommitPoint(database: LocalDatabase, options: WriteOptions, point: CommitPoint): Unit =
    database.put(options, database.commit, committedKey, point.toBytes)

  /** The marker alone, in a write of its own, before the first chunk of a replay. */
  def writeInFlight(database: LocalDatabase, options: WriteOptions, version: Long): Unit =
    database.put(options, database.commit, inFlightKey, versionBytes(version))

  private def versionBytes(version: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(version).array()

  private def commitPoint(dir: File, bytes: Array[Byte]): CommitPoint = {
    val point =
      try CommitPoint.fromBytes(bytes)
      catch { case e: Exception => throw EngineErrors.unreadableCommitPoint(dir, e) }
    if (!CommitPoint.readableFormatVersions.contains(point.formatVersion)) {
      throw EngineErrors.newerStorageFormat(dir, point.formatVersion, point.writtenBy, CommitPoint.readableFormatVersions)
    }
    point
  }
}
