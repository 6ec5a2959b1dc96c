package txstate.migrate

import org.json4s.{JArray, JObject, JString}
import org.json4s.jackson.JsonMethods

/**
 * The batch an in-place rescale adds (docs/ARCHITECTURE.md, "Migration"). Rewriting the committed
 * version in place would write over the changelogs and snapshots the original query loads until
 * the switch, so the rescaled stores land one version higher, as the state of a new batch
 * `last + 1` that reads nothing new: its offset entry repeats the last batch's positions with the
 * new partition count, and its commit entry repeats the last one's (under checkpoint format v2,
 * naming the new stores' ids). The commit entry, written last, is the switch: Spark resumes after
 * the newest committed batch, on the partition count its offset entry records.
 *
 * @param batch the new batch's id (the last committed batch + 1); its state is version `batch + 1`
 */
final case class RescaleBatch(batch: Long) {
  def stateVersion: Long = batch + 1

  /**
   * Writes the new batch's offset entry, then its commit entry. Between the two, the checkpoint has
   * an unfinished batch whose partition count differs from the one before: Spark 4.2 and newer
   * refuse to resume such a batch, and `migrate --undo` removes it (see `undo`).
   */
  def commit(logs: CheckpointLogs, offsetEntry: OffsetLogEntry, lastCommitText: String,
      ids: Option[Map[Long, Seq[Seq[String]]]]): Unit = {
    logs.replace(logs.offsetFile(batch), offsetEntry.text)
    logs.replace(logs.commitFile(batch), ids.fold(lastCommitText)(RescaleBatch.withIds(lastCommitText, _)))
  }

  /** Whether this batch's offset entry was written (the switch may have started). */
  def started(logs: CheckpointLogs): Boolean = logs.offsetBatches.contains(batch)

  /** Removes the batch: the commit entry first (the switch back), then the offset entry. */
  def undo(logs: CheckpointLogs): Unit =
    Seq(logs.commitFile(batch), logs.offsetFile(batch)).filter(logs.fs.exists).foreach { file =>
      if (!logs.fs.delete(file, false)) throw new java.io.IOException(s"could not delete $file")
    }
}

object RescaleBatch {
  /**
   * A format-v2 commit entry's text with `stateUniqueIds` replaced by `ids` (per operator, per
   * partition, one id per store in the operator's store order), every other field as it was.
   */
  def withIds(commitText: String, ids: Map[Long, Seq[Seq[String]]]): String = {
    val lines = commitText.linesIterator.toVector
    val metadata = JsonMethods.parse(lines.drop(1).mkString("\n")) match {
      case JObject(fields) => fields.filterNot(_._1 == "stateUniqueIds")
      case other => throw MigrationErrors.badArgument("the last commit entry", s"is not a JSON object: $other")
    }
    val unique = JObject(ids.toList.sortBy(_._1).map { case (op, partitions) =>
      op.toString -> JArray(partitions.map(stores => JArray(stores.map(JString(_)).toList)).toList)
    })
    s"${lines.head}\n${JsonMethods.compact(JObject(metadata :+ ("stateUniqueIds" -> unique)))}"
  }
}
