package txstate.checkpoint

import java.io.{File, IOException}
import java.nio.file.{Files, StandardOpenOption}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.engine.ChangeRecord

final class ChangelogFileTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes("UTF-8")

  private val records: Vector[ChangeRecord] = Vector(
    ChangeRecord.DeleteRange(b("a"), b("c")),
    ChangeRecord.DeleteRange(Array.emptyByteArray, Array[Byte](0)),
    ChangeRecord.Put(b("b"), b("after the range")),
    ChangeRecord.Put(Array[Byte](0, -1, 127, -128), Array.emptyByteArray),
    ChangeRecord.Put(b("big"), Array.tabulate(70000)(_.toByte)), // larger than the write buffer
    ChangeRecord.Delete(b("gone")))

  private val header = ChangelogHeader(version = 7, checkpointId = "id-7", baseCheckpointId = Some("id-6"),
    numKeys = 12345, commitTimeMs = 1700000000000L)

  private def describe(r: ChangeRecord): String = r match {
    case ChangeRecord.Put(k, v) => s"put ${k.toSeq} ${v.toSeq}"
    case ChangeRecord.Delete(k) => s"delete ${k.toSeq}"
    case ChangeRecord.DeleteRange(f, u) => s"range ${f.toSeq} ${u.toSeq}"
  }

  /** A checkpoint in a fresh directory, addressed with the `file:` scheme. */
  private def newCheckpoint(): StoreCheckpoint =
    new StoreCheckpoint(new Path(newTempPath("checkpoint").toURI), new Configuration())

  private def localFile(p: Path): File = new File(p.toUri)

  /** Hadoop's local file system keeps a `.name.crc` sidecar; removing it leaves our own CRC32C as the only check. */
  private def dropHadoopChecksum(p: Path): Unit = Files.deleteIfExists(new File(localFile(p).getParentFile, s".${p.getName}.crc").toPath)

  private def writeOne(cp: StoreCheckpoint, h: ChangelogHeader = header, id: Option[String] = None): Path = {
    cp.writeChangelog(h, id, records.iterator)
    cp.changelogPath(h.version, id)
  }

  /** Writes one changelog, then damages its bytes in place (without Hadoop's checksum side file). */
  private def writeDamaged(cp: StoreCheckpoint)(damage: Array[Byte] => Unit): Path = {
    val path = writeOne(cp)
    dropHadoopChecksum(path)
    val f = localFile(path)
    val bytes = Files.readAllBytes(f.toPath)
    damage(bytes)
    Files.write(f.toPath, bytes)
    path
  }

  private def assertCorrupt(cp: StoreCheckpoint, path: Path, why: String)(read: => Any): CorruptChangelogException = {
    val e = intercept[CorruptChangelogException](read)
    assert(e.getMessage.contains(path.toString), s"the message names the file: ${e.getMessage}")
    assert(e.getMessage.contains(why), e.getMessage)
    assert(e.path == path)
    e
  }

  test("a changelog round-trips its header and every kind of record in order") {
    val cp = newCheckpoint()
    try {
      val path = cp.changelogPath(7, None)
      val written = cp.writeChangelog(header, None, records.iterator)
      assert(path.getName == "7.txlog")
      assert(written == localFile(path).length())
      val log = cp.readChangelog(7, None)
      assert(log.header == header)
      assert(log.records.map(describe).toVector == records.map(describe))
      assert(cp.readChangelogHeader(7, None) == header)
    } finally cp.close()
  }

  test("an empty changelog of a root version round-trips") {
    val cp = newCheckpoint()
    try {
      val root = header.copy(version = 1, baseCheckpointId = None, numKeys = 0)
      cp.writeChangelog(root, Some("abc"), Iterator.empty)
      assert(cp.changelogPath(1, Some("abc")).getName == "1_abc.txlog")
      val log = cp.readChangelog(1, Some("abc"))
      assert(log.header == root)
      assert(log.records.isEmpty)
    } finally cp.close()
  }

  test("a write that fails half-way leaves no file under the changelog's name") {
    val cp = newCheckpoint()
    try {
      val failing = records.iterator ++ Iterator.continually[ChangeRecord](throw new IOException("disk full")).take(1)
      intercept[IOException](cp.writeChangelog(header, None, failing))
      intercept[MissingChangelogException](cp.readChangelog(7, None))
    } finally cp.close()
  }

  test("a flipped byte anywhere in the file is reported as corrupt, naming the file") {
    val cp = newCheckpoint()
    try {
      val small = header.copy(version = 3)
      cp.writeChangelog(small, None, Iterator(ChangeRecord.Put(b("k"), b("v")), ChangeRecord.Delete(b("d"))))
      val path = cp.changelogPath(3, None)
      dropHadoopChecksum(path)
      val original = Files.readAllBytes(localFile(path).toPath)
      for (i <- original.indices) {
        val damaged = original.clone()
        damaged(i) = (damaged(i) ^ 0x10).toByte
        Files.write(localFile(path).toPath, damaged)
        val e = intercept[CorruptChangelogException](cp.readChangelog(3, None).records.foreach(_ => ()))
        assert(e.getMessage.contains(path.toString), s"byte $i: ${e.getMessage}")
      }
    } finally cp.close()
  }

  test("a flipped byte is reported as corrupt, naming the file, whatever checksum side files the file system keeps") {
    val cp = newCheckpoint()
    try {
      val path = writeOne(cp)
      val f = localFile(path)
      val bytes = Files.readAllBytes(f.toPath)
      bytes(bytes.length / 2) = (bytes(bytes.length / 2) ^ 0x01).toByte
      Files.write(f.toPath, bytes)
      assertCorrupt(cp, path, "")(cp.readChangelog(7, None))
    } finally cp.close()
  }

  test("a truncated changelog is reported as corrupt, naming the file") {
    val cp = newCheckpoint()
    try {
      val path = writeOne(cp)
      dropHadoopChecksum(path)
      val f = localFile(path)
      val full = Files.readAllBytes(f.toPath)
      for (keep <- Seq(0, 3, 10, 40, full.length / 2, full.length - 1)) {
        Files.write(f.toPath, java.util.Arrays.copyOf(full, keep), StandardOpenOption.TRUNCATE_EXISTING)
        assertCorrupt(cp, path, "")(cp.readChangelog(7, None))
      }
      Files.write(f.toPath, java.util.Arrays.copyOf(full, 10))
      assertCorrupt(cp, path, "truncated")(cp.readChangelogHeader(7, None))
    } finally cp.close()
  }

  test("a file that is not a changelog (wrong magic) is reported as corrupt, naming the file") {
    val cp = newCheckpoint()
    try {
      val path = writeDamaged(cp)(bytes => bytes(0) = 'X'.toByte)
      assertCorrupt(cp, path, "magic")(cp.readChangelog(7, None))
      assertCorrupt(cp, path, "magic")(cp.readChangelogHeader(7, None))
    } finally cp.close()
  }

  test("a changelog of a newer format is refused as such, naming the file, the format and the release needed") {
    val cp = newCheckpoint()
    try {
      // The low byte of the format version after the 4-byte magic, with the checksum made right again.
      val path = writeDamaged(cp)(bytes => resealed { bytes(7) = 9; bytes })
      for (read <- Seq(() => cp.readChangelogHeader(7, None), () => cp.readChangelog(7, None))) {
        val e = intercept[NewerFormatException](read())
        assert(e.path == path && e.found == 9 && e.readable == Seq(1, 2, 3), e.getMessage)
        assert(e.getMessage.contains(path.toString) && e.getMessage.contains("reads changelog format 9"), e.getMessage)
      }
    } finally cp.close()
  }

  test("a header whose checkpoint id is not valid UTF-8 any more is reported as corrupt, naming the file") {
    val cp = newCheckpoint()
    try {
      val idStart = 4 + 4 + 8 + 2 // magic, format, version, the id's UTF length
      val path = writeDamaged(cp)(bytes => bytes(idStart + 1) = (bytes(idStart + 1) ^ 0x80).toByte)
      assertCorrupt(cp, path, "")(cp.readChangelog(7, None))       // the checksum catches it
      assertCorrupt(cp, path, "")(cp.readChangelogHeader(7, None)) // the header alone must too
    } finally cp.close()
  }

  test("a missing changelog raises MissingChangelogException naming the file") {
    val cp = newCheckpoint()
    try {
      writeOne(cp)
      val missing = cp.changelogPath(8, None)
      val e1 = intercept[MissingChangelogException](cp.readChangelog(8, None))
      assert(e1.getMessage.contains(missing.toString))
      assert(e1.path == missing)
      val e2 = intercept[MissingChangelogException](cp.readChangelogHeader(8, None))
      assert(e2.getMessage.contains(missing.toString))
      val e3 = intercept[MissingChangelogException](cp.readChangelog(7, Some("other-id")))
      assert(e3.getMessage.contains("7_other-id.txlog"))
    } finally cp.close()
  }

  test("rewriting a version replaces the file atomically (a re-run batch under checkpoint format v1)") {
    val cp = newCheckpoint()
    try {
      writeOne(cp)
      val rerun = header.copy(checkpointId = "id-7-rerun")
      cp.writeChangelog(rerun, None, Iterator(ChangeRecord.Delete(b("x"))))
      val log = cp.readChangelog(7, None)
      assert(log.header == rerun)
      assert(log.records.map(describe).toVector == Vector(describe(ChangeRecord.Delete(b("x")))))
    } finally cp.close()
  }

  /** Where the codec byte of a format-2 changelog with `header` sits: after the frame and header fields. */
  // Format 3's header: format 2's, then storage format, stamp (batch, time), TTL index start and the writer.
  private def codecOffset(h: ChangelogHeader): Int =
    4 + 4 + 8 + (2 + h.checkpointId.length) + 1 + h.baseCheckpointId.fold(0)(2 + _.length) + 8 + 8 + 4 +
      4 + 8 + 8 + 8 + (2 + h.writtenBy.length)

  /** Recomputes the frame's trailing CRC32C after a deliberate edit, so only the edit is wrong. */
  private def resealed(bytes: Array[Byte]): Array[Byte] = {
    val crc = txstate.compat.JavaLibrary.newCrc32c()
    crc.update(bytes, 0, bytes.length - 4)
    java.nio.ByteBuffer.wrap(bytes, bytes.length - 4, 4).putInt(crc.getValue.toInt)
    bytes
  }

  test("a changelog written by 0.1.0 (format 1, records stored plain) still reads, header and records") {
    // Written by txstate-spark 0.1.0's ChangelogFile (jvm/src/test/resources/fixtures/changelog-format1).
    val fixture = new File(getClass.getResource("/fixtures/changelog-format1/7_id-7.txlog").toURI)
    val cp = newCheckpoint()
    try {
      val path = cp.changelogPath(7, Some("id-7"))
      Files.createDirectories(localFile(path).getParentFile.toPath)
      Files.copy(fixture.toPath, localFile(path).toPath)
      assert(Files.readAllBytes(fixture.toPath)(7) == 1, "the fixture is format 1")
      val expected = Vector(
        ChangeRecord.DeleteRange(b("a"), b("c")),
        ChangeRecord.Put(b("b"), b("after the range")),
        ChangeRecord.Put(Array[Byte](0, -1, 127, -128), Array.emptyByteArray),
        ChangeRecord.Put(b("big"), Array.tabulate(5000)(_.toByte)),
        ChangeRecord.Delete(b("gone")))
      val log = cp.readChangelog(7, Some("id-7"))
      // Storage format 1, written by 0.1.0, no stamp: what a header before changelog format 3 means.
      val asWritten = header.copy(segments = 0, storageFormat = 1, writtenBy = "0.1.0")
      assert(log.header == asWritten)
      assert(log.records.map(describe).toVector == expected.map(describe))
      assert(cp.readChangelogHeader(7, Some("id-7")) == asWritten)
    } finally cp.close()
  }

  test("records are stored LZ4-encoded (since format 2, codec named after the header): a batch of rows shrinks") {
    val cp = newCheckpoint()
    try {
      // Rows shaped like a streaming aggregation's: UnsafeRow-like keys and values, mostly zeros.
      val rows = (0 until 5000).map { i =>
        val key = new Array[Byte](32)
        val value = new Array[Byte](40)
        java.nio.ByteBuffer.wrap(key).putLong(8, 16L << 32 | 8).put(24, (i % 251).toByte).put(25, (i / 251).toByte)
        java.nio.ByteBuffer.wrap(value).putLong(8, i.toLong).putLong(16, 3L * i)
        ChangeRecord.Put(key, value)
      }
      val raw = rows.map(r => 1 + 4 + r.key.length + 4 + r.value.length).sum
      val written = cp.writeChangelog(header, None, rows.iterator)
      val bytes = Files.readAllBytes(localFile(cp.changelogPath(7, None)).toPath)
      assert(bytes(7) == 3, "format 3")
      assert(bytes(codecOffset(header)) == ChangelogCodec.Lz4.id)
      assert(written < raw / 3, s"$written bytes written for $raw bytes of records")
      assert(cp.readChangelog(7, None).records.map(describe).toVector == rows.map(describe))
    } finally cp.close()
  }

  test("records in a codec this build does not know are reported as corrupt, naming the file and the codec") {
    val cp = newCheckpoint()
    try {
      val path = writeDamaged(cp)(bytes => resealed { bytes(codecOffset(header)) = 7; bytes })
      val e = assertCorrupt(cp, path, "unknown codec 7")(cp.readChangelog(7, None).records.toVector)
      assert(e.getMessage.contains("newer txstate-spark"), e.getMessage)
      assert(cp.readChangelogHeader(7, None) == header, "the header stays readable: lineage checks need no codec")
    } finally cp.close()
  }
}
