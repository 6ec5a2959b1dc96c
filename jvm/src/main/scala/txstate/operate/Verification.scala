package txstate.operate

import org.json4s.{JArray, JBool, JInt, JNull, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods

/** One damaged or missing file: what is wrong with it and what Spark would do with it. */
/** `partition` is None for a file of the whole store. */
final case class Finding(store: String, partition: Option[Int], path: String, problem: String, consequence: String)

/** A replay of a store partition's newest version compared with its commit point (`verify --deep`). */
final case class DeepCheck(version: Long, keys: Long, committedKeys: Long, digest: String, oldestWriteMs: Option[Long],
    newestWriteMs: Option[Long]) {
  def matches: Boolean = keys == committedKeys
}

/** What verify read of one txstate store partition and which versions it proved loadable. */
final case class PartitionCheck(store: String, partition: Int, dir: String, filesRead: Int, bytesRead: Long,
    versionsFrom: Long, versionsTo: Long, loadable: Int, unreferencedStoredFiles: Int, deep: Option[DeepCheck])

/** Everything `verify` found. `sound` holds when there is no finding. */
final case class Verification(checkpoint: String, provider: String, version: Long, minBatchesToRetain: Int,
    findings: Seq[Finding], checked: Seq[PartitionCheck], notChecked: Seq[String], elapsedMs: Long) {
  def sound: Boolean = findings.isEmpty

  def json: String = JsonMethods.compact(JObject(
    "checkpoint" -> JString(checkpoint), "provider" -> JString(provider), "version" -> JInt(version),
    "minBatchesToRetain" -> JInt(minBatchesToRetain), "sound" -> JBool(sound),
    "findings" -> JArray(findings.map(f => JObject("store" -> JString(f.store), "partition" -> f.partition.fold[JValue](JNull)(p => JInt(p)),
      "path" -> JString(f.path), "problem" -> JString(f.problem), "consequence" -> JString(f.consequence))).toList),
    "checked" -> JArray(checked.map(check).toList),
    "notChecked" -> JArray(notChecked.map(JString(_)).toList), "elapsedMs" -> JInt(elapsedMs)))

  private def check(c: PartitionCheck): JValue = JObject(
    "store" -> JString(c.store), "partition" -> JInt(c.partition), "dir" -> JString(c.dir),
    "filesRead" -> JInt(c.filesRead), "bytesRead" -> JInt(c.bytesRead), "versionsFrom" -> JInt(c.versionsFrom),
    "versionsTo" -> JInt(c.versionsTo), "loadable" -> JInt(c.loadable),
    "unreferencedStoredFiles" -> JInt(c.unreferencedStoredFiles),
    "deep" -> c.deep.fold[JValue](JNull)(d => JObject("version" -> JInt(d.version), "keys" -> JInt(d.keys),
      "committedKeys" -> JInt(d.committedKeys), "digest" -> JString(d.digest), "matches" -> JBool(d.matches),
      "oldestWriteMs" -> time(d.oldestWriteMs), "newestWriteMs" -> time(d.newestWriteMs))))

  private def time(ms: Option[Long]): JValue = ms.fold[JValue](JNull)(t => JInt(t))
}
