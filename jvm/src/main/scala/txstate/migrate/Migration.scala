package txstate.migrate

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s.{JInt, JNothing, JString, JValue}
import org.json4s.jackson.JsonMethods

import txstate.spark.LiveStores

/**
 * Moves a stopped query's state from the provider its checkpoint records to another one, so that
 * the query, restarted unchanged, runs its next batch on the new provider with exactly the state
 * it had (docs/ARCHITECTURE.md, "Migration").
 *
 * Order of work, chosen so that a crash at any point leaves the original checkpoint usable or the
 * migrated one complete: inspect and refuse; back up the offset log entry and write the plan;
 * copy every store partition at the committed version with the destination's own provider and
 * verify it by reading it back; then switch, which is one atomic replace of the last offset log
 * entry (the provider class Spark re-applies at restart). Until the switch the destination's files
 * sit beside the source's, which neither provider reads.
 *
 * @param sessionConf the session's settings (provider settings such as txstate.* are taken from here)
 */
final class Migration(sessionConf: Map[String, String], hadoopConf: Configuration, progress: MigrationProgress) {

  def run(options: MigrationOptions): MigrationReport =
    if (options.undo) undo(options) else migrate(options)

  private def migrate(options: MigrationOptions): MigrationReport = {
    val startedNs = System.nanoTime()
    val logs = open(options.checkpoint)
    val root = logs.root.toString
    val last = lastCommitted(logs)
    val uncommitted = logs.offsetBatches.filter(_ > last)
    if (uncommitted.nonEmpty && !options.rollbackUncommitted) {
      throw MigrationErrors.uncommittedOffsets(root, last, uncommitted)
    }
    if (uncommitted.size > 1 || uncommitted.exists(_ != last + 1)) {
      throw MigrationErrors.severalUncommitted(root, last, uncommitted)
    }
    refuseIfActive(logs, options.activeWindowSeconds)
    // With --rollback-uncommitted the pending batch keeps its planned offsets: its offset entry is
    // the one Spark reads at restart, so that is the entry switched, and Spark re-runs that batch
    // (same id, same input) from the state of the last commit, now on the destination.
    val rerun = uncommitted.headOption
    val offsetBatch = rerun.getOrElse(last)
    val offsetFile = logs.offsetFile(offsetBatch)
    val originalText = logs.read(offsetFile)
    val entry = OffsetLogEntry.parse(originalText, offsetFile)
    val from = entry.conf.getOrElse(ProviderChoice.settingKey, ProviderChoice.Hdfs.className)
    refuseFormatV2(logs, entry, last)
    val to = options.destination
    options.partitions.foreach { _ =>
      throw MigrationErrors.badArgument("--partitions", "(rescaling state partitions) is not available in this " +
        "release; migrate without it to change the provider only")
    }
    if (to.className == from) throw MigrationErrors.alreadyThere(root, ProviderChoice.describe(from))
    Seq(from, to.className).foreach(loadable)
    val stores = StoreInventory.read(logs.root, hadoopConf)
    val version = last + 1
    // The session's settings, overlaid with those the query recorded (Spark re-applies them at restart).
    def copierWith(scratch: Path) = new StoreCopier(new Path(logs.root, "state"), sessionConf ++ entry.conf, hadoopConf,
      scratch)
    val partitions = stores.map(_.partitions.size).sum
    progress.note(s"checkpoint=$root from=${ProviderChoice.describe(from)} to=${to.name} batch=$last " +
      s"version=$version stores=${stores.size} partitions=$partitions dryRun=${options.dryRun}")

    if (options.dryRun) {
      progress.enter("count", partitions)
      val counted = stores.map(store => reportFor(store)(p => copierWith(logs.root).digest(from, store, p, version)))
      MigrationReport(root, ProviderChoice.describe(from), to.name, last, version, dryRun = true, switched = false,
        counted, None, rerun, seconds(startedNs))
    } else {
      // A stopped query's txstate providers may still be loaded here (same application): they
      // upload their staged snapshots now, never into a store another provider owns.
      val released = LiveStores.releaseAll(new Path(logs.root, "state").toString)
      if (released > 0) progress.note(s"released=$released txstate stores this JVM still had loaded")
      val backup = MigrationBackup.create(logs, hadoopConf)
      backup.keep(offsetFile)
      backup.write("plan.json", planJson(root, from, to, last, version, offsetBatch, stores))
      progress.note(s"plan=${backup.dir}")
      progress.enter("copy", partitions)
      val scratch = new Path(backup.dir, "scratch")
      val copier = copierWith(scratch)
      val copied = stores.map { store =>
        reportFor(store) { p =>
          val source = copier.copy(from, to.className, store, p, version, () => progress.row())
          val written = copier.digest(to.className, store, p, version)
          if (written != source) {
            throw MigrationErrors.verificationFailed(s"${store.label}, partition $p", source.toString, written.toString)
          }
          source
        }
      }
      logs.fs.delete(scratch, true)
      // The switch: only now does the checkpoint name the destination. Nothing may have moved meanwhile.
      if (logs.read(offsetFile) != originalText || logs.offsetBatches.lastOption.exists(_ > offsetBatch) ||
          logs.commitBatches.lastOption.exists(_ > last)) {
        throw MigrationErrors.metadataChanged(offsetFile.toString)
      }
      progress.enter("switch", 0)
      logs.replace(offsetFile, entry.withConf(Map(ProviderChoice.settingKey -> to.className)).text)
      val report = MigrationReport(root, ProviderChoice.describe(from), to.name, last, version, dryRun = false,
        switched = true, copied, Some(backup.dir.toString), rerun, seconds(startedNs))
      backup.write("switched.json", report.json)
      progress.enter("done", 0)
      report
    }
  }

  /** Puts back the offset log entry the newest migration replaced, if no batch ran since. */
  private def undo(options: MigrationOptions): MigrationReport = {
    val startedNs = System.nanoTime()
    val logs = open(options.checkpoint)
    val root = logs.root.toString
    refuseIfActive(logs, options.activeWindowSeconds)
    val backup = MigrationBackup.all(logs, hadoopConf).filter(b => b.has("switched.json") && !b.has("undone.json"))
      .lastOption.getOrElse(throw MigrationErrors.nothingToUndo(root))
    val switched = JsonMethods.parse(backup.read("switched.json"))
    def field(name: String): JValue = switched \ name match {
      case JNothing => throw MigrationErrors.badArgument(s"${backup.dir}/switched.json", s"has no '$name'")
      case value => value
    }
    val (committed, from, to) = (field("lastCommittedBatch"), field("from"), field("to")) match {
      case (JInt(b), JString(f), JString(t)) => (b.toLong, f, t)
      case other => throw MigrationErrors.badArgument(s"${backup.dir}/switched.json", s"is not a migration report: $other")
    }
    val rerun = switched \ "rerunBatch" match {
      case JInt(b) => Some(b.toLong)
      case _ => None
    }
    val offsetBatch = rerun.getOrElse(committed)
    val newest = logs.offsetBatches.lastOption.getOrElse(-1L)
    if (newest != offsetBatch || logs.commitBatches.lastOption.exists(_ > committed)) {
      throw MigrationErrors.undoAfterNewBatches(root, offsetBatch, newest)
    }
    val offsetFile = logs.offsetFile(offsetBatch)
    logs.replace(offsetFile, logs.read(backup.kept(offsetFile)))
    val report = MigrationReport(root, to, from, committed, committed + 1, dryRun = false, switched = true,
      Nil, Some(backup.dir.toString), rerun, seconds(startedNs), action = "undo")
    backup.write("undone.json", report.json)
    progress.note(s"undone=${backup.dir} provider=$from")
    report
  }

  private def open(checkpoint: String): CheckpointLogs = {
    val path = new Path(checkpoint)
    val root = path.getFileSystem(hadoopConf).makeQualified(path)
    val logs = new CheckpointLogs(root, hadoopConf)
    if (!logs.fs.exists(logs.offsetsDir)) throw MigrationErrors.noCheckpoint(root.toString)
    logs
  }

  private def lastCommitted(logs: CheckpointLogs): Long =
    logs.commitBatches.lastOption.getOrElse(throw MigrationErrors.nothingCommitted(logs.root.toString))

  private def refuseIfActive(logs: CheckpointLogs, windowSeconds: Long): Unit =
    if (windowSeconds > 0) logs.newestWrite.foreach { case (file, modifiedMs) =>
      val ageMs = System.currentTimeMillis() - modifiedMs
      if (ageMs < windowSeconds * 1000) {
        throw MigrationErrors.looksActive(logs.root.toString, file.toString, math.max(0, ageMs / 1000), windowSeconds)
      }
    }

  /** Format 2 records per-partition checkpoint ids that the destination would have to match. */
  private def refuseFormatV2(logs: CheckpointLogs, entry: OffsetLogEntry, last: Long): Unit = {
    val commit = logs.read(logs.commitFile(last))
    if (entry.conf.get("spark.sql.streaming.stateStore.checkpointFormatVersion").contains("2") ||
        commit.contains("\"stateUniqueIds\":{\"")) {
      throw MigrationErrors.checkpointFormatV2(logs.root.toString, last)
    }
  }

  private def loadable(className: String): Unit =
    try Class.forName(className, false, Thread.currentThread().getContextClassLoader)
    catch { case NonFatal(e) => throw MigrationErrors.providerUnavailable(className, e) }


  private def reportFor(store: StoreToCopy)(partition: Int => StoreDigest): StoreReport = {
    val startedNs = System.nanoTime()
    val digest = store.partitions.foldLeft(StoreDigest.empty) { (sum, p) =>
      val what = s"${store.label}, partition $p"
      progress.starting(what)
      val d = partition(p)
      progress.finished(what, d)
      sum + d
    }
    StoreReport(store.operatorId, store.operatorName, store.storeName, store.numPartitions, digest.rows, digest.hash,
      seconds(startedNs))
  }

  private def planJson(root: String, from: String, to: ProviderChoice, last: Long, version: Long,
      offsetBatch: Long, stores: Seq[StoreToCopy]): String = {
    import org.json4s.{JArray, JObject}
    JsonMethods.pretty(JObject(
      "checkpoint" -> JString(root), "from" -> JString(from), "to" -> JString(to.className),
      "lastCommittedBatch" -> JInt(last), "stateVersion" -> JInt(version),
      "rewrites" -> JArray(List(JString(s"offsets/$offsetBatch"))),
      "rerunBatch" -> (if (offsetBatch > last) JInt(offsetBatch) else org.json4s.JNull),
      "stores" -> JArray(stores.map(s => JObject("operatorId" -> JInt(s.operatorId),
        "operatorName" -> JString(s.operatorName), "storeName" -> JString(s.storeName),
        "partitions" -> JInt(s.numPartitions), "partitionsWithState" -> JArray(s.partitions.map(JInt(_)).toList), "keySchema" -> JString(s.keySchema.simpleString),
        "valueSchema" -> JString(s.valueSchema.simpleString), "numColsPrefixKey" -> JInt(s.numColsPrefixKey))).toList)))
  }

  private def seconds(startedNs: Long): Double = (System.nanoTime() - startedNs) / 1e9
}
