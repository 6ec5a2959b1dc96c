package txstate.operate

import org.json4s.{JArray, JBool, JDouble, JInt, JNull, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods

/**
 * The snapshot and changelogs a load of the newest version would use: restore the snapshot of
 * `snapshotVersion` (None: start from an empty store), then replay `changelogVersions` in order.
 * `problem` says why no such chain was found.
 */
final case class LoadChain(snapshotVersion: Option[Long], changelogVersions: Seq[Long], problem: Option[String]) {
  def describe: String = problem.getOrElse {
    val start = snapshotVersion.fold("empty store")(v => s"snapshot $v")
    if (changelogVersions.isEmpty) start
    else if (changelogVersions.size == 1) s"$start + changelog ${changelogVersions.head}"
    else s"$start + ${changelogVersions.size} changelogs (${changelogVersions.head}..${changelogVersions.last})"
  }
}

/** What the newest version's txstate files say of themselves (its changelog's header). */
final case class TxStateVersionFacts(keys: Long, commitTimeMs: Long, storageFormat: Int, changelogFormat: Int,
    writtenBy: String, newestWriteMs: Option[Long])

/** One store partition; `header`: what the newest version's txstate changelog header says. `unreadable` says what could not be read, and why. */
final case class PartitionFacts(partition: Int, dir: String, bytes: FileBytes, oldestVersion: Option[Long],
    newestVersion: Option[Long], chain: Option[LoadChain], header: Option[TxStateVersionFacts],
    unreadable: Seq[String]) {
  def keys: Option[Long] = header.map(_.keys)
}

/** The largest partition of a store against the median, by keys (txstate) or bytes, with advice. */
final case class Skew(measure: String, largestPartition: Int, largest: Long, median: Long, ratio: Double,
    flagged: Boolean, advice: Option[String])

final case class StoreFacts(operatorId: Long, operatorName: String, storeName: String, provider: String,
    numPartitions: Option[Int], partitions: Seq[PartitionFacts], skew: Option[Skew], cannotRead: Seq[String]) {
  def keys: Option[Long] = if (partitions.nonEmpty && partitions.forall(_.keys.isDefined)) Some(partitions.flatMap(_.keys).sum)
    else None
}

/** Everything `inspect` reports of a checkpoint. */
final case class CheckpointInspection(checkpoint: String, providerClass: Option[String], provider: String,
    checkpointFormat: Int, lastCommittedBatch: Option[Long], lastCommitTimeMs: Option[Long], minBatchesToRetain: Int,
    stores: Seq[StoreFacts], notes: Seq[String], elapsedMs: Long) {
  def stateVersion: Long = lastCommittedBatch.fold(0L)(_ + 1)

  def json: String = JsonMethods.compact(InspectionJson.of(this))
}

private object InspectionJson {
  def opt[A](value: Option[A])(f: A => JValue): JValue = value.fold[JValue](JNull)(f)
  def long(value: Option[Long]): JValue = opt(value)(v => JInt(v))
  def strings(values: Seq[String]): JArray = JArray(values.map(JString(_)).toList)

  def of(i: CheckpointInspection): JValue = JObject(
    "checkpoint" -> JString(i.checkpoint), "providerClass" -> opt(i.providerClass)(JString(_)),
    "provider" -> JString(i.provider), "checkpointFormat" -> JInt(i.checkpointFormat),
    "lastCommittedBatch" -> long(i.lastCommittedBatch), "lastCommitTimeMs" -> long(i.lastCommitTimeMs),
    "stateVersion" -> JInt(i.stateVersion), "minBatchesToRetain" -> JInt(i.minBatchesToRetain),
    "stores" -> JArray(i.stores.map(store).toList), "notes" -> strings(i.notes), "elapsedMs" -> JInt(i.elapsedMs))

  private def store(s: StoreFacts): JValue = JObject(
    "operatorId" -> JInt(s.operatorId), "operatorName" -> JString(s.operatorName), "storeName" -> JString(s.storeName),
    "provider" -> JString(s.provider), "numPartitions" -> opt(s.numPartitions)(n => JInt(n)), "keys" -> long(s.keys),
    "partitions" -> JArray(s.partitions.map(partition).toList), "skew" -> opt(s.skew)(skew),
    "cannotRead" -> strings(s.cannotRead))

  private def partition(p: PartitionFacts): JValue = JObject(
    "partition" -> JInt(p.partition), "dir" -> JString(p.dir), "keys" -> long(p.keys),
    "bytes" -> JObject("snapshots" -> JInt(p.bytes.snapshots), "sharedFiles" -> JInt(p.bytes.sharedFiles),
      "changelogs" -> JInt(p.bytes.changelogs), "other" -> JInt(p.bytes.other), "total" -> JInt(p.bytes.total),
      "files" -> JInt(p.bytes.files)),
    "oldestVersion" -> long(p.oldestVersion), "newestVersion" -> long(p.newestVersion),
    "chain" -> opt(p.chain)(c => JObject("snapshotVersion" -> long(c.snapshotVersion),
      "changelogVersions" -> JArray(c.changelogVersions.map(v => JInt(v)).toList),
      "problem" -> opt(c.problem)(JString(_)), "describe" -> JString(c.describe))),
    "txstate" -> opt(p.header)(t => JObject("keys" -> JInt(t.keys), "commitTimeMs" -> JInt(t.commitTimeMs),
      "storageFormat" -> JInt(t.storageFormat), "changelogFormat" -> JInt(t.changelogFormat),
      "writtenBy" -> JString(t.writtenBy), "newestWriteMs" -> long(t.newestWriteMs))),
    "unreadable" -> strings(p.unreadable))

  private def skew(s: Skew): JValue = JObject(
    "measure" -> JString(s.measure), "largestPartition" -> JInt(s.largestPartition), "largest" -> JInt(s.largest),
    "median" -> JInt(s.median), "ratio" -> JDouble(s.ratio), "flagged" -> JBool(s.flagged),
    "advice" -> opt(s.advice)(JString(_)))
}
