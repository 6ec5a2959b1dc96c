package txstate.engine

import java.io.{ByteArrayOutputStream, DataOutputStream, File}

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * A local database a newer release wrote: a newer storage format in the commit point is refused
 * with the release that wrote it, never read wrong; a column family this build does not know is
 * no reason to refuse (the commit point decides).
 */
final class StorageFormatErrorsTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private val stamp = WriteStamp(0, 1700000000000L)

  /** A database at version 1 holding one stamped row, closed. */
  private def database(): (File, CommitPoint) = {
    val dir = newTempPath("db")
    val p = withEngine(dir)(engine => commitStamped(engine, stamp)(_.put(b("a"), b("1"))))
    (dir, p)
  }

  /** What a future release would record: storage format 3, written by 9.9.9. */
  private def newerPoint(base: CommitPoint): CommitPoint =
    base.copy(version = base.version + 1, formatVersion = 3, writtenBy = "9.9.9")

  private def writeCommitPoint(dir: File, bytes: Array[Byte]): Unit =
    RawRocks.put(dir, LocalDatabase.commitFamily, b("committed"), bytes)

  test("a commit point of a newer storage format fails the open with TXSTATE_NEWER_STORAGE_FORMAT, naming its writer") {
    val (dir, p) = database()
    writeCommitPoint(dir, newerPoint(p).toBytes)

    val e = intercept[LocalStateException](TxEngine.open(dir))
    assert(e.errorCode == "TXSTATE_NEWER_STORAGE_FORMAT", e.getMessage)
    Seq("storage format 3", "txstate-spark 9.9.9", dir.toString, "storage formats 1 and 2", "9.9.9 or newer")
      .foreach(part => assert(e.getMessage.contains(part), s"the message lacks '$part': ${e.getMessage}"))
    // The failed open released RocksDB's LOCK: a second open fails the same way instead of on the lock.
    assert(intercept[LocalStateException](TxEngine.open(dir)).errorCode == "TXSTATE_NEWER_STORAGE_FORMAT")
    // Nothing was changed or upgraded: the rows are as they were.
    assert(RawRocks.keys(dir, LocalDatabase.stampedFamily) == Vector("a"))
    assert(CommitPoint.fromBytes(RawRocks.entries(dir, LocalDatabase.commitFamily).toMap.apply(b("committed").toSeq).toArray) ==
      newerPoint(p))
  }

  test("a commit point in an encoding this build does not know names a newer release, never reads as garbage") {
    val (dir, p) = database()
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    out.writeInt(3) // encoding 3: fields this build cannot know follow
    out.write(p.toBytes.drop(4))
    out.writeLong(42L)
    out.flush()
    writeCommitPoint(dir, bytes.toByteArray)
    val e = intercept[LocalStateException](TxEngine.open(dir))
    assert(e.errorCode == "TXSTATE_UNREADABLE_COMMIT_POINT", e.getMessage)
    assert(e.getMessage.contains("encoding 3") && e.getMessage.contains("a newer txstate-spark wrote it") &&
      e.getMessage.contains(dir.toString), e.getMessage)
  }

  test("a database with a column family a newer build added opens, keeps that family, and the commit point decides") {
    val (dir, p) = database()
    RawRocks.put(dir, "added_by_a_newer_build", b("x"), b("y"))
    val p2 = withEngine(dir) { engine =>
      assert(engine.committed == p)
      assert(viewRows(engine) == Vector(("a", "1", stamp)))
      commitStamped(engine, stamp.copy(batchId = 1))(_.put(b("b"), b("2")))
    }
    assert(RawRocks.familyNames(dir).contains("added_by_a_newer_build"))
    assert(RawRocks.entries(dir, "added_by_a_newer_build") == Vector(b("x").toSeq -> b("y").toSeq), "its rows untouched")
    withEngine(dir)(engine => assert(engine.committed == p2 && engine.committed.numKeys == 2))

    // The same database with a commit point of a newer format: now the open is refused.
    writeCommitPoint(dir, newerPoint(p2).toBytes)
    val e = intercept[LocalStateException](TxEngine.open(dir))
    assert(e.errorCode == "TXSTATE_NEWER_STORAGE_FORMAT" && e.getMessage.contains("9.9.9"), e.getMessage)
  }
}
