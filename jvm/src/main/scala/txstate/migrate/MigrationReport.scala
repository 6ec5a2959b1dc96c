package txstate.migrate

import org.json4s.{JArray, JBool, JInt, JNull, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods

/** What migrate did (or, with --dry-run, would do) to one store, summed over its partitions. */
final case class StoreReport(operatorId: Long, operatorName: String, storeName: String, partitions: Int,
    rows: Long, hash: Long, seconds: Double) {
  def json: JValue = JObject("operatorId" -> JInt(operatorId), "operatorName" -> JString(operatorName),
    "storeName" -> JString(storeName), "partitions" -> JInt(partitions), "rows" -> JInt(rows),
    "hash" -> JString(f"$hash%016x"), "seconds" -> org.json4s.JDouble(seconds))
}

/**
 * The outcome of one run of migrate: returned to Python as JSON and kept in the backup folder.
 * `rescaleBatch`: the batch an in-place (or format-v2) rescale added (`RescaleBatch`).
 */
final case class MigrationReport(checkpoint: String, from: String, to: String, lastCommittedBatch: Long,
    stateVersion: Long, dryRun: Boolean, switched: Boolean, stores: Seq[StoreReport], backup: Option[String],
    rerunBatch: Option[Long], partitionsFrom: Int, partitionsTo: Int, seconds: Double, action: String = "migrate",
    rescaleBatch: Option[Long] = None) {
  def rows: Long = stores.map(_.rows).sum

  def json: String = JsonMethods.compact(JObject(
    "action" -> JString(action),
    "checkpoint" -> JString(checkpoint), "from" -> JString(from), "to" -> JString(to),
    "lastCommittedBatch" -> JInt(lastCommittedBatch), "stateVersion" -> JInt(stateVersion),
    "dryRun" -> JBool(dryRun), "switched" -> JBool(switched), "rows" -> JInt(rows),
    "stores" -> JArray(stores.map(_.json).toList), "backup" -> backup.fold[JValue](JNull)(JString(_)),
    "rerunBatch" -> rerunBatch.fold[JValue](JNull)(JInt(_)),
    "rescaleBatch" -> rescaleBatch.fold[JValue](JNull)(JInt(_)),
    "partitionsFrom" -> JInt(partitionsFrom), "partitionsTo" -> JInt(partitionsTo), "seconds" -> org.json4s.JDouble(seconds)))
}
