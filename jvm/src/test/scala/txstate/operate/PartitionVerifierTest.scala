package txstate.operate

import java.io.File
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.checkpoint.{ChangelogHeader, CheckpointReader, CountingReads, StoreCheckpoint}
import txstate.engine.ChangeRecord
import txstate.store.{InterleavedReader, ReadOnlyFileSystem, StoreInstance, WriterBeside}

final class PartitionVerifierTest extends AnyFunSuite with TempDirectories {
  private val conf = new Configuration()

  /** A format-v1 store whose changelogs 1 to `versions` form one lineage, one key added per version. */
  private def store(versions: Int): Path = {
    val root = new Path(newTempPath("store").toURI)
    val writer = new StoreCheckpoint(root, conf)
    try {
      (1 to versions).foreach { v =>
        val header = ChangelogHeader(v, s"id-$v", if (v == 1) None else Some(s"id-${v - 1}"), v, 1700000000000L + v)
        writer.writeChangelog(header, None, Iterator(ChangeRecord.Put(s"k$v".getBytes("UTF-8"), Array[Byte](1))))
      }
    } finally writer.close()
    root
  }

  private def verifierOf(partition: TxStatePartition): PartitionVerifier =
    new PartitionVerifier(partition, "operator 0 (test), store default", 0, new OperateProgress)

  private def verify(root: Path, version: Long, oldest: Long): (Seq[Finding], PartitionCheck) = {
    val reads = ReadOnlyFileSystem.reads(root, conf)
    verifierOf(new TxStatePartition(new CheckpointReader(root, reads), reads, idsInFileNames = false))
      .run(version, oldest, _ => None)
  }

  private def flipByte(file: File): Unit = {
    val bytes = Files.readAllBytes(file.toPath)
    bytes(bytes.length / 2) = (bytes(bytes.length / 2) ^ 0x5a).toByte
    Files.write(file.toPath, bytes)
  }

  test("a sound store has no finding and every version of the window loads") {
    val (findings, check) = verify(store(4), 4, 1)
    assert(findings.isEmpty, findings)
    assert(check.loadable == 4 && check.filesRead == 4)
  }

  test("a pass lists the partition's directory once however many versions it walks; a stopped store has one pass") {
    val root = store(8)
    val reads = new CountingReads(root, conf)
    val (findings, check) = verifierOf(new TxStatePartition(new CheckpointReader(root, reads), reads, idsInFileNames = false))
      .verify(8, retain = 8, _ => None)
    assert(findings.isEmpty && check.loadable == 8)
    assert(reads.listsOf(root) == 2, "one listing for the pass, one after it to see whether the files moved")
  }

  test("a damaged changelog is named, with the restart it breaks and the versions it takes along") {
    val root = store(4)
    flipByte(new File(new File(root.toUri), "3.txlog"))
    val (findings, check) = verify(root, 4, 1)
    val Seq(finding) = findings
    assert(finding.path.endsWith("3.txlog"))
    assert(finding.problem.contains("TXSTATE_CORRUPT_CHANGELOG"), finding.problem)
    assert(finding.consequence.startsWith("the query fails at restart loading version 4"), finding.consequence)
    assert(finding.consequence.contains("; version 3 cannot load either"), finding.consequence)
    assert(check.loadable == 2)
  }

  test("a changelog missing inside the window is named itself; one missing below it means a lost snapshot") {
    val inside = store(4)
    new File(new File(inside.toUri), "1.txlog").delete()
    val (Seq(named), _) = verify(inside, 4, 1)
    assert(named.path.endsWith("/1.txlog") && named.problem.contains("TXSTATE_MISSING_CHANGELOG"), named)
    assert(named.consequence.contains("version 4 (the state after batch 3); versions 1 to 3 cannot load"), named)
    val below = store(4)
    new File(new File(below.toUri), "2.txlog").delete()
    val (Seq(lost), _) = verify(below, 4, 3)
    assert(lost.path.endsWith("/3_id-3.snapshot") && lost.problem.contains("snapshot manifest"), lost)
    assert(PartitionVerifier.consequence(Seq(2L, 3L), 4, snapshotFile = false).startsWith("only older versions"))
    assert(PartitionVerifier.consequence(Nil, 4, snapshotFile = true).startsWith("no retained version is lost"))
  }

  test("a provider that names files by version loads from the newest snapshot and every changelog above it") {
    val files = Seq(VersionFile(2, snapshot = true), VersionFile(4, snapshot = true)) ++
      (1L to 6L).map(VersionFile(_, snapshot = false))
    assert(Inspector.fileChain(files, 6) == LoadChain(Some(4), Seq(5L, 6L), None))
    assert(Inspector.fileChain(files, 3) == LoadChain(Some(2), Seq(3L), None))
    val gap = Inspector.fileChain(files.filterNot(_ == VersionFile(5, snapshot = false)), 6)
    assert(gap.problem.exists(_.contains("missing version 5")), gap)
  }

  // ---- a running query's checkpoint: its maintenance moves files while verify reads them --------

  private val retain = 3

  /** `verify` of a writer at version 6 (see [[WriterBeside]]) through `reader(root, writer)`. */
  private def verifyBeside(version: Long)(reader: (Path, StoreInstance) => CheckpointReader)
      : (Seq[Finding], PartitionCheck, Path) = {
    val root = new Path(newTempPath("running").toURI)
    val writer = WriterBeside.at6(root, newTempPath("writer"))
    try {
      val reads = ReadOnlyFileSystem.reads(root, conf)
      val (findings, check) = verifierOf(new TxStatePartition(reader(root, writer), reads, idsInFileNames = false))
        .verify(version, retain, _ => None)
      (findings, check, root)
    } finally writer.close()
  }

  test("changelogs a running query cleans up while verify reads them are not damage: the pass is made again") {
    var interleaved: Option[InterleavedReader] = None
    // Listed 1 to 6, then the query's maintenance deletes 1 to 3 as verify starts reading them.
    val (findings, check, root) = verifyBeside(6) { (root, writer) =>
      val reader = new InterleavedReader(root, "readChangelog", () => WriterBeside.maintain(writer, retain))
      interleaved = Some(reader)
      reader
    }
    assert(interleaved.exists(_.interleaved))
    assert(WriterBeside.changelogFiles(root) == Set("4.txlog", "5.txlog", "6.txlog"))
    assert(findings.isEmpty, findings)
    assert(check.loadable == 3 && check.versionsFrom == 4, check)
  }

  test("versions a running query no longer keeps, having committed past what verify read, are not findings") {
    // The commit log said version 4 when verify started; the query has since committed 6 and cleaned
    // up below its snapshot of 4, so versions 2 and 3 of the window 2..4 need not load any more.
    val (findings, check, _) = verifyBeside(4) { (root, writer) =>
      WriterBeside.maintain(writer, retain)
      new CheckpointReader(root, ReadOnlyFileSystem.reads(root, conf))
    }
    assert(findings.isEmpty, findings)
    assert(check.loadable == 1 && check.versionsFrom == 4, check)
  }

  test("versions below the retention of a stopped query's newest changelog are not damage, though Spark committed one fewer") {
    // The run committed version 6 in the store and stopped before Spark's commit log said so (it
    // says 5). Its cleanup kept 3 versions up to 6, as the store's cleanup counts from its newest
    // changelog: version 3, in the window 3..5 of the commit log, was deleted as no longer kept.
    val (findings, check, root) = verifyBeside(5) { (root, writer) =>
      WriterBeside.maintain(writer, retain)
      new CheckpointReader(root, ReadOnlyFileSystem.reads(root, conf))
    }
    assert(!WriterBeside.changelogFiles(root).contains("3.txlog"))
    assert(findings.isEmpty, findings)
    assert(check.versionsFrom == 4 && check.loadable == 2, check)
  }

  test("a stopped store's missing changelog is reported after one pass, not hidden by a retry") {
    val root = store(4)
    new File(new File(root.toUri), "2.txlog").delete()
    val reads = ReadOnlyFileSystem.reads(root, conf)
    val partition = new TxStatePartition(new CheckpointReader(root, reads), reads, idsInFileNames = false)
    val (findings, _) = verifierOf(partition).verify(4, 4, _ => None)
    assert(findings.map(f => new Path(f.path).getName) == Seq("2.txlog"), findings)
  }

  test("skew is flagged by keys with advice to rescale, and not for an even store") {
    def partition(p: Int, keys: Long) = PartitionFacts(p, s"/p$p", FileBytes(0, 0, 0, 0, 0), None, None, None,
      Some(TxStateVersionFacts(keys, 0, 2, 3, "test", None)), Nil)
    val skewed = Skews.of(Seq(partition(0, 10), partition(1, 12), partition(2, 5000)), "/cp").get
    assert(skewed.flagged && skewed.largestPartition == 2 && skewed.median == 12)
    assert(skewed.advice.exists(_.contains("--partitions 6")), skewed)
    assert(!Skews.of(Seq(partition(0, 4000), partition(1, 4100)), "/cp").get.flagged)
  }
}
