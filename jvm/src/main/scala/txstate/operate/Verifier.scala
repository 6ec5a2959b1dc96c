package txstate.operate

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

/**
 * `verify`: every txstate store partition of a checkpoint through [[PartitionVerifier]], and with
 * `deep` a replay of each sound partition's newest version against the key count its commit point
 * records ([[DeepReplay]]). The versions that must load are those within `minBatchesToRetain` of the
 * newest (the given value, else what the query's cleanups recorded, else the offset log's setting, else
 * Spark's default: [[OpenedCheckpoint.minBatchesToRetain]]).
 */
final class Verifier(checkpoint: OpenedCheckpoint, hadoopConf: Configuration, minBatchesToRetain: Option[Int],
    deep: Boolean, progress: OperateProgress) {
  private val retain = minBatchesToRetain.getOrElse(checkpoint.minBatchesToRetain)
  private val version = checkpoint.version

  def run(): Verification = {
    val started = System.currentTimeMillis()
    val stores = if (checkpoint.provider == ProviderKind.txstate) checkpoint.stores else Nil
    progress.enter("verify", stores.map(_.partitionDirs.size).sum)
    val results = for {
      store <- stores
      (p, dir) <- store.partitionDirs
    } yield {
      progress.starting(s"${store.label}, partition $p")
      val partition = checkpoint.txstatePartition(dir)
      val (found, check) = new PartitionVerifier(partition, store.label, p, progress)
        .verify(version, retain, v => checkpoint.committedId(v, store, p))
      val result =
        if (!deep || found.nonEmpty || version == 0) (found, check)
        else replay(store, p, partition, check) match {
          case Right(deepCheck) => (found ++ mismatch(store, p, dir.toString, deepCheck), check.copy(deep = Some(deepCheck)))
          case Left(finding) => (found :+ finding, check)
        }
      progress.finished()
      result
    }
    val schemaFindings = stores.flatMap(SchemaFileCheck.findings(checkpoint, _))
    val recordFindings = checkpoint.retentionRecords.collect { case RetentionRecordOf(store, p, path, Left(e)) =>
      Finding(store.label, Some(p), path.toString, e.getMessage, s"no state is lost; verify checked the $retain " +
        "newest versions, which may be more than the query keeps (a version its cleanup deleted is then reported too)")
    }
    val notChecked =
      if (checkpoint.provider == ProviderKind.txstate) Nil
      else Seq(s"the query runs on Spark's ${checkpoint.provider} provider (${checkpoint.logs.providerClass.getOrElse(
        "Spark's default")}): verify reads txstate's files only; `inspect` lists this checkpoint's files and versions")
    val findings = results.flatMap(_._1) ++ schemaFindings ++ recordFindings
    Verification(checkpoint.root.toString, checkpoint.provider, version, retain, findings, results.map(_._2), notChecked,
      System.currentTimeMillis() - started)
  }

  private def replay(store: OperatorStore, p: Int, partition: TxStatePartition, check: PartitionCheck)
      : Either[Finding, DeepCheck] =
    try {
      val committed = checkpoint.committedId(version, store, p)
      val id = partition.checkpointId(version, committed)
      val expected = partition.facts(version, id).keys
      val replayed = DeepReplay.run(partition.reader.root, hadoopConf, checkpoint.idsInFileNames, version,
        committed, s"${store.label}, partition $p")
      Right(DeepCheck(version, replayed.keys, expected, f"${replayed.digest}%016x", replayed.oldestWriteMs,
        replayed.newestWriteMs))
    } catch {
      case NonFatal(e) => Left(Finding(store.label, Some(p), check.dir, s"replaying version $version fails: ${e.getMessage}",
        PartitionVerifier.consequence(Seq(version), version, snapshotFile = false)))
    }

  private def mismatch(store: OperatorStore, p: Int, dir: String, deep: DeepCheck): Option[Finding] =
    if (deep.matches) None
    else Some(Finding(store.label, Some(p), dir, s"replaying version ${deep.version} gives ${deep.keys} keys, but its " +
      s"commit point records ${deep.committedKeys}", "the query restarts on state that differs from what was " +
      "committed: the files are valid but do not add up (files of another query or attempt mixed in). Restore the " +
      "store from a backup or restart the query from a new checkpoint."))
}
