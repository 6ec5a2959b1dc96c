package txstate.operate

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.checkpoint.{CheckpointFileException, CheckpointReader}
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

  /**
   * Each txstate store partition's retention record ([[CheckpointReader.recordedRetention]]): what
   * it says (None: no cleanup deleted versions there yet), or why it cannot be read.
   */
  lazy val retentionRecords: Seq[RetentionRecordOf] =
    if (provider != ProviderKind.txstate) Nil
    else for {
      store <- stores
      (p, dir) <- store.partitionDirs
    } yield {
      val reader = new CheckpointReader(dir, ReadOnlyFileSystem.reads(dir, hadoopConf))
      val recorded = try Right(reader.recordedRetention()) catch { case e: CheckpointFileException => Left(e) }
      RetentionRecordOf(store, p, reader.retentionPath, recorded)
    }

  /**
   * The versions the query keeps loadable: what its own cleanups recorded (the smallest, where
   * partitions differ), else the offset log's setting (Spark records it there only when a query
   * set it among the settings it records), else Spark's default. Below it, a missing version is
   * one the query's cleanup deleted, never damage.
   */
  lazy val minBatchesToRetain: Int =
    retentionRecords.collect { case RetentionRecordOf(_, _, _, Right(Some(retained))) => retained }.reduceOption(_ min _).getOrElse(logs.minBatchesToRetain)

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

/** One store partition's retention record, at `path`: its value, or the damage that keeps it from being read. */
final case class RetentionRecordOf(store: OperatorStore, partition: Int, path: Path,
    recorded: Either[CheckpointFileException, Option[Int]])
