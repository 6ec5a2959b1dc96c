package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.checkpoint.{CheckpointReader, CorruptRetentionRecordException}

/**
 * The retention record: a cleanup that deletes versions first records the minBatchesToRetain it
 * deletes under, so `verify` and `inspect` can tell its deletions from lost versions.
 */
final class RetentionRecordTest extends AnyFunSuite with TempDirectories {
  private val week = 7L * 24 * 60 * 60 * 1000

  private def reader(root: Path) = new CheckpointReader(root, ReadOnlyFileSystem.reads(root, new Configuration()))

  private def commit(writer: StoreInstance, version: Long): Unit = {
    val batch = writer.begin()
    batch.put(s"k$version".getBytes(UTF_8), s"v$version".getBytes(UTF_8))
    require(batch.commit().version == version)
  }

  test("a cleanup that deletes versions records its retention first; one that deletes none records nothing") {
    val root = new Path(newTempPath("checkpoint").toURI)
    val writer = WriterBeside.at6(root, newTempPath("writer"))
    try {
      // Nothing staged is uploaded yet: no snapshot to anchor on, so nothing is deleted or recorded.
      writer.cleanup(minVersionsToRetain = 2, storedFileGraceMs = week)
      assert(reader(root).recordedRetention().isEmpty)
      WriterBeside.maintain(writer, retain = 2)
      assert(WriterBeside.changelogFiles(root) == Set("4.txlog", "5.txlog", "6.txlog"), "versions 1 to 3 were deleted")
      assert(reader(root).recordedRetention().contains(2))
    } finally writer.close()
  }

  /** A checkpoint at version 6 whose writer's maintenance kept 2 versions and recorded it; the writer closed. */
  private def cleanedUpKeeping2(): Path = {
    val root = new Path(newTempPath("checkpoint").toURI)
    val writer = WriterBeside.at6(root, newTempPath("writer"))
    try WriterBeside.maintain(writer, retain = 2) finally writer.close()
    root
  }

  test("a later run that cleans up under another retention records its own") {
    val root = cleanedUpKeeping2()
    val second = StoreInstance.open(LocalDirectory(newTempPath("second"), stable = true, None), root,
      new Configuration(), StoreOptions(snapshotInterval = 2), "second")
    try {
      second.load(6, None)
      (7L to 10L).foreach(commit(second, _))
      assert(second.uploadSnapshot().map(_.version).contains(10L), "the snapshot of version 10 was staged")
      (11L to 12L).foreach(commit(second, _))
      // Keeping versions 10 to 12 anchors on the snapshot of 10: the changelogs below it go.
      second.cleanup(minVersionsToRetain = 3, storedFileGraceMs = week)
      assert(WriterBeside.changelogFiles(root).map(_.stripSuffix(".txlog").toLong).min > 4, "the second run deleted versions")
      assert(reader(root).recordedRetention().contains(3))
    } finally second.close()
  }

  test("a damaged record is refused, naming the file and what to do") {
    val root = cleanedUpKeeping2()
    val record = new File(reader(root).retentionPath.toUri)
    FileDamage.FlipByte(record, Array.emptyByteArray)
    val e = intercept[CorruptRetentionRecordException](reader(root).recordedRetention())
    assert(e.getMessage.startsWith(s"[TXSTATE_CORRUPT_RETENTION_RECORD] the retention record ${reader(root).retentionPath}"))
    assert(e.getMessage.contains("--min-batches-to-retain"))
  }
}
