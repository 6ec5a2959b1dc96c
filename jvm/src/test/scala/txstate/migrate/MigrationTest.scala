package txstate.migrate

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StateStoreProvider}
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.StateApi
import txstate.compat.StateApi.NoPrefixKeyStateEncoderSpec
import txstate.spark.{CheckpointFixture, KeyPlacement, SparkOperatorMetadata}

/**
 * A whole migration over the checkpoint of a real Spark run (txstate state, two partitions), with
 * Spark's own HDFS provider as the destination: what it copies, switches, refuses and undoes.
 */
final class MigrationTest extends AnyFunSuite with CheckpointFixture {
  import CheckpointFixture._

  // Spark's commit validation reports to a coordinator; there is none without a SparkContext.
  private val sessionConf = Map("spark.sql.streaming.stateStore.commitValidation.enabled" -> "false")

  private def migrate(options: MigrationOptions, log: String => Unit = _ => ()): MigrationReport =
    new Migration(sessionConf, hadoopConf, new MigrationProgress(log)).run(options)

  private def options(ck: TestCheckpoint, to: String = "hdfs", partitions: Option[Int] = None, dryRun: Boolean = false) =
    MigrationOptions(ck.root, Some(to), partitions, dryRun = dryRun, activeWindowSeconds = 0)

  private def refusal(options: MigrationOptions): String = intercept[IllegalStateException](migrate(options)).getMessage

  /** Partition `p` of the `agg` store at its last version, as Spark's HDFS provider reads it. */
  private def hdfsRows(ck: TestCheckpoint, p: Int): Map[Seq[Any], Seq[Any]] = {
    val provider = StateStoreProvider.create(ProviderChoice.Hdfs.className)
    val runConf = new Configuration(hadoopConf)
    runConf.set("sql.streaming.runId", UUID.randomUUID().toString) // what Spark's executors give a provider
    try {
      StateApi.initProvider(provider, StateStoreId(ck.stateRoot, 0, p), aggKeySchema, aggValueSchema,
        NoPrefixKeyStateEncoderSpec(aggKeySchema), storeConf(), runConf)
      val store = StateApi.readStore(provider, aggVersion, None)
      try pairs(store.iterator(), aggKeySchema, aggValueSchema).toMap finally store.abort()
    } finally provider.close()
  }

  private def txstateRows(ck: TestCheckpoint, p: Int) = storeRows(ck.stateRoot, p, aggKeySchema, aggValueSchema, aggVersion)

  test("a dry run counts every row of every store partition and changes no log") {
    val ck = sparkRunCheckpoint("agg")
    val logs = Seq("offsets/2", "commits/2", "state/0/_metadata/metadata").map(f => f -> read(ck.file(f)))
    val report = migrate(options(ck, partitions = Some(3), dryRun = true))
    assert(report.dryRun && !report.switched && report.backup.isEmpty)
    assert((report.from, report.to, report.lastCommittedBatch, report.stateVersion) == (("txstate", "hdfs", 2L, 3L)))
    assert(report.rows == aggState.size && report.stores.map(_.rows) == Seq(aggState.size.toLong))
    assert(logs.forall { case (f, text) => read(ck.file(f)) == text })
    assert(!ck.file(MigrationBackup.folderName).exists())
  }

  test("rescaling a real run onto Spark's HDFS provider copies every row into its partition, and undo restores it") {
    val ck = sparkRunCheckpoint("agg")
    val before = Seq("offsets/2", "state/0/_metadata/metadata").map(f => f -> read(ck.file(f)))
    val original = Seq(0, 1).map(txstateRows(ck, _))
    val progress = Seq.newBuilder[String]
    val report = migrate(options(ck, partitions = Some(3)), progress += _)
    assert(report.switched && (report.partitionsFrom, report.partitionsTo) == ((2, 3)) && report.rows == aggState.size)
    assert(progress.result().exists(_.startsWith("phase=done")))

    val logs = new CheckpointLogs(new Path(ck.root), hadoopConf)
    val conf = OffsetLogEntry.parse(logs.read(logs.offsetFile(2)), logs.offsetFile(2)).conf
    assert(conf(ProviderChoice.settingKey) == ProviderChoice.Hdfs.className && conf("spark.sql.shuffle.partitions") == "3")
    val stateRoot = new Path(ck.stateRoot)
    assert(SparkOperatorMetadata.read(stateRoot.getFileSystem(hadoopConf), new Path(stateRoot, "0")).stores
      .map(_.numPartitions) == Seq(3))
    val placement = new KeyPlacement(aggKeySchema, 1, 3)
    val key = new RowMaker(aggKeySchema)
    val copied = (0 until 3).map(p => p -> hdfsRows(ck, p))
    assert(copied.flatMap(_._2).toMap == aggState && copied.map(_._2.size).sum == aggState.size)
    for ((p, rows) <- copied; k <- rows.keys) assert(placement.partitionOf(key(k: _*)) == p, s"key $k")

    val undone = migrate(MigrationOptions(ck.root, None, undo = true, activeWindowSeconds = 0))
    assert(undone.action == "undo" && (undone.from, undone.to) == (("hdfs", "txstate")))
    assert(before.forall { case (f, text) => read(ck.file(f)) == text })
    assert(Seq(0, 1).map(txstateRows(ck, _)) == original, "the original provider still reads its state")
    val again = intercept[IllegalStateException](migrate(MigrationOptions(ck.root, None, undo = true,
      activeWindowSeconds = 0)))
    assert(again.getMessage.startsWith("[TXSTATE_MIGRATION_NOTHING_TO_UNDO]"))
  }

  test("a checkpoint already on the destination is refused before anything is written") {
    val ck = sparkRunCheckpoint("agg")
    assert(refusal(options(ck, to = "txstate")).startsWith("[TXSTATE_MIGRATION_NOTHING_TO_DO] checkpoint "))
    val e = intercept[IllegalArgumentException](migrate(options(ck, partitions = Some(0))))
    assert(e.getMessage == "[TXSTATE_MIGRATION_BAD_ARGUMENT] --partitions must be between 1 and 100000, got 0")
    assert(!ck.file(MigrationBackup.folderName).exists())
  }

  test("a query stopped mid-batch, or one that looks active, is refused with what to do") {
    val ck = sparkRunCheckpoint("agg")
    logBatch(ck, 3, Map(ProviderChoice.settingKey -> ProviderChoice.TxState.className), committed = false)
    val pending = refusal(options(ck))
    assert(pending.startsWith("[TXSTATE_MIGRATION_UNCOMMITTED_OFFSETS]") && pending.contains("batch(es) 3 without a " +
      "commit (the last committed batch is 2)") && pending.contains("--rollback-uncommitted"))
    logBatch(ck, 4, committed = false)
    assert(refusal(options(ck).copy(rollbackUncommitted = true)).contains("more than the one batch Spark re-runs"))
    val active = refusal(options(sparkRunCheckpoint("agg")).copy(activeWindowSeconds = 3600))
    assert(active.startsWith("[TXSTATE_MIGRATION_QUERY_ACTIVE]") && active.contains("--active-window 0"))
    assert(refusal(options(newCheckpoint())).startsWith("[TXSTATE_MIGRATION_NO_CHECKPOINT]"))
  }
}
