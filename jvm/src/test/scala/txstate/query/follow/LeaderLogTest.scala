package txstate.query.follow

import org.scalatest.funsuite.AnyFunSuite

import txstate.spark.CheckpointFixture

/** What a follower reads of its leader: the newest batch in Spark's commit log (LeaderLog), on real directories. */
final class LeaderLogTest extends AnyFunSuite with CheckpointFixture {
  private def leaderOf(ck: TestCheckpoint) = new LeaderLog(ck.root, hadoopConf)

  test("a leader that has committed no batch has no newest batch") {
    val ck = newCheckpoint()
    assert(leaderOf(ck).newest().isEmpty && leaderOf(ck).committedAtMs(0).isEmpty)
    ck.file("commits").mkdirs()
    assert(leaderOf(ck).newest().isEmpty)
  }

  test("the newest batch is the highest number, not the last name listed; temporary files and folders are not batches") {
    val ck = newCheckpoint()
    Seq(2, 10, 9).foreach(commit(ck, _))
    write(ck.file("commits/.11.8c1f.tmp"), "partly written")
    ck.file("commits/12").mkdirs()
    val newest = leaderOf(ck).newest().get
    assert(newest.batchId == 10 && newest.ids.isEmpty)
  }

  test("the newest batch of a real Spark run's commit log (beside Hadoop's checksum files), without checkpoint ids") {
    val ck = sparkRunCheckpoint("agg")
    assert(ck.file("commits/.2.crc").isFile)
    val newest = leaderOf(ck).newest().get
    assert(newest.batchId == 2 && newest.ids.isEmpty)
  }

  test("a format-2 commit names the checkpoint id of each operator's partitions' stores") {
    val ck = newCheckpoint()
    commit(ck, 0, Some("""{"0": [["a0", "b0"], ["a1", "b1"]], "3": [["c0"]]}"""))
    val ids = leaderOf(ck).newest().get.ids
    assert(ids.of(0, 1, 1).contains("b1") && ids.of(0, 0, 0).contains("a0") && ids.of(3, 0, 0).contains("c0"))
    assert(ids.of(0, 2, 0).isEmpty && ids.of(1, 0, 0).isEmpty && ids.of(3, 0, 1).isEmpty)
  }

  test("when Spark committed a batch is its commit file's modification time; a batch not in the log has none") {
    val ck = newCheckpoint()
    val base = System.currentTimeMillis() - 60000L
    Seq(0, 1).foreach(b => assert(commit(ck, b).setLastModified(base + b * 1000)))
    val leader = leaderOf(ck)
    assert(leader.committedAtMs(0).contains(base) && leader.committedAtMs(1).contains(base + 1000))
    assert(leader.newest().get.committedAtMs == base + 1000)
    assert(leader.committedAtMs(2).isEmpty)
  }
}
