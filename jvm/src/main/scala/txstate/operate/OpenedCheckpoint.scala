package txstate.operate

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.checkpoint.CheckpointReader
import txstate.store.ReadOnlyFileSystem

/**
 * A checkpoint opened for reading only: every file is reached through one [[ReadOnlyFileSystem]]
 * view (create, delete, rename, mkdirs and append throw), so inspect and verify provably change
 * nothing. `version` is the state version a restart loads (the last committed batch + 1).
 */
final class OpenedCheckpoint private (val root: Path, hadoopConf: Configuration) {
  val fs = new ReadOnlyFileSystem(root.getFileSystem(hadoopConf))
  val logs = new QueryLogs(root, fs)
  val provider: String = ProviderKind.of(logs.providerClass)
  val idsInFileNames: Boolean = logs.checkpointFormat >= 2
  val version: Long = logs.lastCommittedBatch.fold(0L)(_ + 1)
  lazy val stores: Seq[OperatorStore] = StoreLayout.stores(new Path(root, "state"), fs)

  /** The txstate reading side of one store partition, over the read-only view. */
  def txstatePartition(dir: Path): TxStatePartition = {
    val reads = ReadOnlyFileSystem.reads(dir, hadoopConf)
    new TxStatePartition(new CheckpointReader(dir, reads), reads, idsInFileNames)
  }

  /** The id Spark's commit log records for `version` of a store partition (format v2 only). */
  def committedId(version: Long, store: OperatorStore, partition: Int): Option[String] =
    if (!idsInFileNames || version == 0) None
    else logs.commitIds(version - 1).of(store.operatorId, partition, store.storeIndex)
}

object OpenedCheckpoint {
  /** Opens `checkpoint`, refusing a path that is not a streaming query's checkpoint. */
  def open(checkpoint: String, hadoopConf: Configuration): OpenedCheckpoint = {
    if (checkpoint.trim.isEmpty) throw OperateErrors.notACheckpoint("''", "the path is empty")
    val opened = new OpenedCheckpoint(new Path(checkpoint), hadoopConf)
    if (!opened.fs.exists(opened.root)) throw OperateErrors.notACheckpoint(checkpoint, "it does not exist")
    if (!opened.fs.getFileStatus(opened.root).isDirectory) throw OperateErrors.notACheckpoint(checkpoint, "it is a file")
    val parts = Seq("offsets", "commits", "state").filter(d => opened.fs.exists(new Path(opened.root, d)))
    if (!parts.contains("offsets") && !parts.contains("state")) {
      throw OperateErrors.notACheckpoint(checkpoint, "it has no offsets/ and no state/ folder")
    }
    opened
  }
}
