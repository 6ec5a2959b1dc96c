package txstate.migrate

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.ChildJvm
import txstate.spark.CheckpointFixture

/** A query's own logs as migrate reads and switches them (CheckpointLogs, OffsetLogEntry), on real directories. */
final class CheckpointLogsTest extends AnyFunSuite with CheckpointFixture {
  private def logsOf(ck: TestCheckpoint) = new CheckpointLogs(new Path(ck.root), hadoopConf)

  test("the logs of a real Spark run: its batches, without Hadoop's checksum files, and the provider it recorded") {
    val ck = sparkRunCheckpoint("agg")
    val logs = logsOf(ck)
    assert(ck.file("offsets/.2.crc").isFile && ck.file("commits/.2.crc").isFile)
    assert(logs.offsetBatches == Seq(0, 1, 2) && logs.commitBatches == Seq(0, 1, 2))
    val entry = OffsetLogEntry.parse(logs.read(logs.offsetFile(2)), logs.offsetFile(2))
    assert(entry.conf(ProviderChoice.settingKey) == ProviderChoice.TxState.className)
    assert(entry.conf("spark.sql.shuffle.partitions") == "2")
  }

  test("batches are listed in numeric order; folders, temporary files and other names are not batches") {
    val ck = newCheckpoint()
    Seq(0, 2, 10, 9, 11).foreach(b => logBatch(ck, b, committed = b != 11))
    write(ck.file("offsets/.12.3f2a.tmp"), "partly written")
    ck.file("offsets/13").mkdirs()
    write(ck.file("commits/latest"), "")
    val logs = logsOf(ck)
    assert(logs.offsetBatches == Seq(0, 2, 9, 10, 11))
    assert(logs.commitBatches == Seq(0, 2, 9, 10))
    assert(logs.offsetFile(10) == new Path(ck.root, "offsets/10") && logs.commitFile(9) == new Path(ck.root, "commits/9"))
  }

  test("a checkpoint without logs has no batches and no newest write") {
    val logs = logsOf(newCheckpoint())
    assert(logs.offsetBatches.isEmpty && logs.commitBatches.isEmpty && logs.newestWrite.isEmpty)
  }

  test("the newest write is the most recently modified batch file of either log, whatever else changed later") {
    val ck = newCheckpoint()
    (0 to 2).foreach(logBatch(ck, _))
    val base = System.currentTimeMillis() - 3600000L
    Seq("offsets", "commits").flatMap(d => (0 to 2).map(b => ck.file(s"$d/$b"))).foreach(f => assert(f.setLastModified(base)))
    assert(ck.file("commits/1").setLastModified(base + 5000))
    assert(write(ck.file("offsets/.3.tmp"), "").setLastModified(base + 9000))
    val (file, modifiedMs) = logsOf(ck).newestWrite.get
    assert(file.getName == "1" && file.getParent.getName == "commits" && modifiedMs == base + 5000)
  }

  test("replace swaps a file's whole text, keeps Hadoop's checksum valid and leaves no temporary file") {
    val ck = sparkRunCheckpoint("agg")
    val logs = logsOf(ck)
    val before = ck.file("offsets").list().toSet
    logs.replace(logs.offsetFile(2), "v1\n{\"conf\":{}}")
    // Reading through Hadoop's local file system checks the .crc file written beside it.
    assert(logs.read(logs.offsetFile(2)) == "v1\n{\"conf\":{}}")
    assert(ck.file("offsets").list().toSet == before && before.contains(".2.crc"))
  }

  test("a process killed while it replaces an offset entry leaves the old text or the new one, never no file") {
    val ck = sparkRunCheckpoint("agg")
    val logs = logsOf(ck)
    val file = logs.offsetFile(2)
    val first = logs.read(file)
    val second = OffsetLogEntry.parse(first, file).withConf(Map(ProviderChoice.settingKey -> ProviderChoice.Hdfs.className))
      .text
    val random = new scala.util.Random(31)
    // Against Hadoop's rename with overwrite, about 4 kills in 10 left no file or a mismatched checksum.
    val afterKills = (1 to 10).map { _ =>
      val child = ChildJvm.start(ReplaceForever.getClass.getName.stripSuffix("$"), ck.root, "offsets/2", first, second)
      try {
        ChildJvm.awaitLine(child, "ready")
        Thread.sleep(10L + random.nextInt(100))
      } finally ChildJvm.kill(child)
      // What a restarted query reads: through Hadoop, which checks the .crc when there is one.
      scala.util.Try(logs.read(file)).fold(e => s"unreadable: $e", text => if (text == first || text == second) "whole"
        else s"other text: ${text.take(80)}")
    }
    assert(afterKills.forall(_ == "whole"), afterKills.filter(_ != "whole").mkString("\n"))
    assert(logs.offsetBatches == Seq(0, 1, 2))
  }

  test("an offset entry's conf keeps its keys in place, takes updates, appends new keys sorted, leaves the rest") {
    val text = "v1\n{\"batchWatermarkMs\":0,\"conf\":{\"b\":\"1\",\"a\":\"2\"},\"batchTimestampMs\":5}\n{\"logOffset\":3}"
    val updated = OffsetLogEntry.parse(text, new Path("/ck/offsets/3")).withConf(Map("a" -> "9", "z" -> "1", "c" -> "0"))
    assert(updated.text ==
      "v1\n{\"batchWatermarkMs\":0,\"conf\":{\"b\":\"1\",\"a\":\"9\",\"c\":\"0\",\"z\":\"1\"},\"batchTimestampMs\":5}\n" +
        "{\"logOffset\":3}")
    assert(updated.conf == Map("b" -> "1", "a" -> "9", "c" -> "0", "z" -> "1"))
    val withoutConf = OffsetLogEntry.parse("v1\n{\"batchWatermarkMs\":0}\n{}", new Path("/ck/offsets/0"))
    assert(withoutConf.conf.isEmpty)
    assert(withoutConf.withConf(Map("k" -> "v")).text == "v1\n{\"batchWatermarkMs\":0,\"conf\":{\"k\":\"v\"}}\n{}")
  }

  test("switching a real Spark run's offset entry changes the provider class and nothing else") {
    val ck = sparkRunCheckpoint("agg")
    val logs = logsOf(ck)
    val entry = OffsetLogEntry.parse(logs.read(logs.offsetFile(2)), logs.offsetFile(2))
    val switched = entry.withConf(Map(ProviderChoice.settingKey -> ProviderChoice.Hdfs.className))
    assert(switched.conf == entry.conf.updated(ProviderChoice.settingKey, ProviderChoice.Hdfs.className))
    assert(switched.lines.size == entry.lines.size && switched.lines.indices.forall(i => i == 1 ||
      switched.lines(i) == entry.lines(i)))
    val back = switched.withConf(Map(ProviderChoice.settingKey -> ProviderChoice.TxState.className))
    assert(back.text == entry.text, "switching back restores the entry byte for byte")
  }

  test("text that is not an offset log entry is refused, naming the file") {
    for (text <- Seq("", "{}", "v1", "v1\nnot json", "x\n{}")) {
      val e = intercept[IllegalArgumentException](OffsetLogEntry.parse(text, new Path("/ck/offsets/3")))
      assert(e.getMessage.startsWith("[TXSTATE_MIGRATION_BAD_ARGUMENT] /ck/offsets/3 is not an offset log entry Spark " +
        "wrote"), text)
    }
  }
}
