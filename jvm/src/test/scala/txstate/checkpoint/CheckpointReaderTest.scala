package txstate.checkpoint

import java.io.File

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/** How a reader names what it finds in a store instance's directory, on a real local directory. */
final class CheckpointReaderTest extends AnyFunSuite with TempDirectories {
  private val conf = new Configuration()

  /** The directory of a store instance holding (empty) files of every kind a reader tells apart. */
  private def directoryOf(names: String*): Path = {
    val dir = newTempDir("store")
    names.foreach(n => assert(new File(dir, n).createNewFile(), n))
    new Path(dir.toURI)
  }

  private def named(entries: Seq[CheckpointEntry]): Seq[(Long, Option[String], String)] =
    entries.map(e => (e.version, e.id, e.path.getName)).sortBy(_._3)

  private val everyKind = Seq("3.txlog", "4_id4.txlog", "4_id4-1.txseg", "5_abc.snapshot", "6.def.txsnapshot",
    "7.snapshot", "7.delta", "8.zip")

  test("each manifest is found once with its version and id, under the name txstate writes or the one beside HDFS") {
    val root = directoryOf(everyKind: _*)
    val reader = new CheckpointReader(root, new CountingReads(root, conf))
    // Spark's HDFS provider's `7.snapshot` names no checkpoint id: it is not a txstate manifest.
    assert(named(reader.snapshots()) == Seq((5L, Some("abc"), "5_abc.snapshot"), (6L, Some("def"), "6.def.txsnapshot")))
    assert(reader.snapshotIds() == Set((5L, "abc"), (6L, "def")))
    assert(named(reader.changelogs()) == Seq((3L, None, "3.txlog"), (4L, Some("id4"), "4_id4.txlog")))
    assert(named(reader.segments()) == Seq((4L, Some("id4-1"), "4_id4-1.txseg")))
  }

  test("one listing holds what the three listings of each kind hold, from one LIST request") {
    val root = directoryOf(everyKind: _*)
    val reads = new CountingReads(root, conf)
    val reader = new CheckpointReader(root, reads)
    val listing = reader.listing()
    assert(reads.listsOf(root) == 1)
    assert(named(listing.changelogs) == named(reader.changelogs()))
    assert(named(listing.segments) == named(reader.segments()))
    assert(named(listing.snapshots) == named(reader.snapshots()))
    assert(listing.snapshotIds == reader.snapshotIds())
    assert(listing.names == Set("3.txlog", "4_id4.txlog", "4_id4-1.txseg", "5_abc.snapshot", "6.def.txsnapshot"))
  }

  test("a store instance with no directory yet lists nothing") {
    val root = new Path(newTempPath("never-written").toURI)
    val reads = new CountingReads(root, conf)
    assert(new CheckpointReader(root, reads).listing() == CheckpointListing(Nil, Nil, Nil) && reads.listsOf(root) == 0)
  }
}
