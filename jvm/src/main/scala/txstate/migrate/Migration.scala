package txstate.migrate

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.json4s.{JInt, JNothing, JString, JValue}
import org.json4s.jackson.JsonMethods

import txstate.spark.{CommitLogIds, LiveStores}

/**
 * Moves a stopped query's state from the provider its checkpoint records to another one, and
 * optionally to another partition count, so that the query, restarted unchanged, runs its next
 * batch on the new provider with exactly the state it had (docs/ARCHITECTURE.md, "Migration").
 *
 * Order of work, chosen so that a crash at any point leaves the original checkpoint usable or the
 * migrated one complete: inspect and refuse; back up the files it will rewrite and write the plan;
 * copy every store at the committed version with the destination's own provider (re-placing
 * every key when rescaling) and verify it by reading it back; then switch, which is one atomic
 * replace of the offset log entry Spark reads at restart (the provider class and partition count
 * it re-applies). Until the switch the destination's files sit beside the source's, which neither
 * provider reads.
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
    if (uncommitted.nonEmpty) interruptedRescale(logs, uncommitted).foreach { backup =>
      throw MigrationErrors.interruptedRescale(root, uncommitted.head, backup.dir.toString)
    }
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
    val to = options.destination
    val stores = StoreInventory.read(logs.root, hadoopConf)
    val oldPartitions = entry.conf.get(shufflePartitionsKey).flatMap(n => Try(n.toInt).toOption)
      .orElse(stores.headOption.map(_.numPartitions)).getOrElse(0)
    options.partitions.filter(n => n < 1 || n > MigrationOptions.maxPartitions).foreach { n =>
      throw MigrationErrors.badArgument("--partitions", s"must be between 1 and ${MigrationOptions.maxPartitions}, got $n")
    }
    val rescaleTo = options.partitions.filter(_ != oldPartitions)
    val inPlace = to.className == from
    if (inPlace && (rescaleTo.isEmpty || to != ProviderChoice.TxState)) {
      throw rescaleTo.fold(MigrationErrors.alreadyThere(root, ProviderChoice.describe(from)))(
        MigrationErrors.rescaleInPlace(root, ProviderChoice.describe(from), _))
    }
    Seq(from, to.className).distinct.foreach(loadable)
    val formatV2 = formatV2Ids(logs, entry, last, stores, to)
    val sourceIds: StoreToCopy => Int => Option[String] = formatV2.getOrElse(_ => _ => None)
    val plans = stores.map(store => StorePlan(store, rescaleTo))
    // Rescaling onto the files the query loads (in place), or onto the ids its commit log names
    // (format v2), cannot rewrite the committed version: the new partitions become a new batch.
    val newBatch = rescaleTo.filter(_ => inPlace || formatV2.isDefined).map(_ => RescaleBatch(last + 1))
    newBatch.foreach(b => rerun.foreach(r => throw MigrationErrors.rescaleUnfinishedBatch(root, last, r)))
    val version = newBatch.fold(last + 1)(_.stateVersion)
    val newIds = newBatch.flatMap(_ => formatV2).map(_ => NewCheckpointIds.of(plans))
    def source(store: StoreToCopy) = StoreVersion(last + 1, sourceIds(store))
    def target(store: StoreToCopy) = StoreVersion(version, newIds.fold(sourceIds(store))(ids => ids.of(store)))
    // The session's settings, overlaid with those the query recorded (Spark re-applies them at restart).
    // Spark does not record the checkpoint format; the commit log's ids show it, and the providers need it.
    val storeConf = sessionConf ++ entry.conf ++ formatV2.map(_ => checkpointFormatKey -> "2")
    def copierWith(scratch: Path) = new StoreCopier(new Path(logs.root, "state"), storeConf, hadoopConf, scratch)
    val partitions = stores.map(_.partitions.size).sum
    val newPartitions = rescaleTo.getOrElse(oldPartitions)
    progress.note(s"checkpoint=$root from=${ProviderChoice.describe(from)} to=${to.name} batch=$last " +
      s"version=$version${newBatch.fold("")(b => s" newBatch=${b.batch}")} stores=${stores.size} partitions=$partitions shufflePartitions=$oldPartitions" +
      rescaleTo.fold("")(n => s"->$n") + s" dryRun=${options.dryRun}")
    def report(stores: Seq[StoreReport], dryRun: Boolean, backup: Option[String]) =
      MigrationReport(root, ProviderChoice.describe(from), to.name, last, version, dryRun, switched = !dryRun,
        stores, backup, rerun, oldPartitions, newPartitions, seconds(startedNs), rescaleBatch = newBatch.map(_.batch))

    if (options.dryRun) {
      progress.enter("count", partitions)
      val counted = plans.map(plan => reportFor(plan.store, plan.store.partitions.map(p =>
        s"partition $p" -> (() => copierWith(logs.root).digest(from, plan.store, p, source(plan.store))))))
      report(counted, dryRun = true, None)
    } else {
      // A stopped query's txstate providers may still be loaded here (same application): they
      // upload their staged snapshots now, never into a store another provider owns.
      val released = LiveStores.releaseAll(new Path(logs.root, "state").toString)
      if (released > 0) progress.note(s"released=$released txstate stores this JVM still had loaded")
      val backup = MigrationBackup.create(logs, hadoopConf)
      val metadataFiles = if (rescaleTo.isEmpty) Nil
        else stores.map(_.operatorId).distinct.map(op => SparkOperatorMetadataFile.path(logs.root, op))
      val rewrites = metadataFiles :+ offsetFile
      rewrites.foreach(backup.keep)
      backup.write("plan.json", planJson(root, from, to, last, version, rewrites.map(backup.relative), oldPartitions,
        newPartitions, plans, newBatch))
      progress.note(s"plan=${backup.dir}")
      val scratch = new Path(backup.dir, "scratch")
      val copier = copierWith(scratch)
      progress.enter("copy", plans.map(_.units.size).sum)
      val copied = plans.map(plan => reportFor(plan.store, plan.units.map { case (what, sources, targets) =>
        what -> (() => copyAndVerify(copier, from, to.className, plan, sources, targets, source(plan.store),
          target(plan.store)))
      }))
      logs.fs.delete(scratch, true)
      // The switch: only now does the checkpoint name the destination. Nothing may have moved meanwhile.
      if (logs.read(offsetFile) != originalText || logs.offsetBatches.lastOption.exists(_ > offsetBatch) ||
          logs.commitBatches.lastOption.exists(_ > last)) {
        throw MigrationErrors.metadataChanged(offsetFile.toString)
      }
      progress.enter("switch", 0)
      // Spark does not read its operator metadata to run the query (the offset entry's partition
      // count rules), but the state data source and interactive queries do; it changes just before
      // the switch, so the one step that moves the query is still the last.
      rescaleTo.foreach(n => metadataFiles.foreach(f => logs.replace(f, SparkOperatorMetadataFile.withPartitions(
        logs.read(f), n, f.toString))))
      val conf = Map(ProviderChoice.settingKey -> to.className) ++ rescaleTo.map(n => shufflePartitionsKey -> n.toString)
      newBatch match {
        case Some(batch) => batch.commit(logs, entry.withConf(conf), logs.read(logs.commitFile(last)), newIds.map(_.byOperator))
        case None => logs.replace(offsetFile, entry.withConf(conf).text)
      }
      val done = report(copied, dryRun = false, Some(backup.dir.toString))
      backup.write("switched.json", done.json)
      progress.enter("done", 0)
      done
    }
  }

  private def copyAndVerify(copier: StoreCopier, from: String, to: String, plan: StorePlan, sources: Seq[Int],
      targets: Seq[Int], sourceVersion: StoreVersion, targetVersion: StoreVersion): StoreDigest = {
    val store = plan.store
    val place: UnsafeRow => Int = plan.placement.fold((_: UnsafeRow) => sources.head)(p => p.partitionOf(_))
    val source = copier.copy(from, to, store, sources, targets, place, sourceVersion, targetVersion,
      () => progress.row())
    var misplaced = 0L
    val written = targets.map(q => copier.digest(to, store, q, targetVersion, key => if (place(key) != q) misplaced += 1))
      .foldLeft(StoreDigest.empty)(_ + _)
    val what = s"${store.label}, partitions ${targets.mkString(",")}"
    if (written != source) throw MigrationErrors.verificationFailed(what, source.toString, written.toString)
    if (misplaced > 0) {
      throw MigrationErrors.verificationFailed(what, "every key in its partition", s"$misplaced keys in another one")
    }
    source
  }

  /**
   * Puts back every file the newest migration rewrote (offset entry, operator metadata) and removes
   * the batch an in-place rescale added, and the partition directories it created, if no batch ran
   * since. A rescale killed before its switch, or between writing its batch's offset entry and its
   * commit entry, is undone the same way.
   */
  private def undo(options: MigrationOptions): MigrationReport = {
    val startedNs = System.nanoTime()
    val logs = open(options.checkpoint)
    val root = logs.root.toString
    refuseIfActive(logs, options.activeWindowSeconds)
    def rescalePlan(b: MigrationBackup) = b.has("plan.json") && (JsonMethods.parse(b.read("plan.json")) \
      "rescaleBatch") != JNothing
    val backup = MigrationBackup.all(logs, hadoopConf).filter(b => !b.has("undone.json") &&
        (b.has("switched.json") || rescalePlan(b)))
      .lastOption.getOrElse(throw MigrationErrors.nothingToUndo(root))
    val recordName = if (backup.has("switched.json")) "switched.json" else "plan.json"
    val record = JsonMethods.parse(backup.read(recordName))
    def field(name: String): JValue = record \ name match {
      case JNothing => throw MigrationErrors.badArgument(s"${backup.dir}/$recordName", s"has no '$name'")
      case value => value
    }
    val (committed, from, to) = (field("lastCommittedBatch"), field("from"), field("to")) match {
      case (JInt(b), JString(f), JString(t)) => (b.toLong, ProviderChoice.describe(f), ProviderChoice.describe(t))
      case other => throw MigrationErrors.badArgument(s"${backup.dir}/$recordName", s"is not a migration report: $other")
    }
    def number(name: String): Option[Long] = record \ name match {
      case JInt(n) => Some(n.toLong)
      case _ => None
    }
    val rerun = number("rerunBatch")
    val added = number("rescaleBatch").map(RescaleBatch(_))
    val offsetBatch = added.fold(rerun.getOrElse(committed))(_.batch)
    val newest = logs.offsetBatches.lastOption.getOrElse(-1L)
    // A rescale's batch may be written in part or not at all (a kill before or during the switch).
    val allowed = added.fold(Set(offsetBatch))(b => Set(committed, b.batch))
    if (!allowed(newest) || logs.commitBatches.lastOption.exists(_ > added.fold(committed)(_.batch))) {
      throw MigrationErrors.undoAfterNewBatches(root, offsetBatch, newest)
    }
    // Every file the migration rewrote, the switch back last: the offset entry it replaced, or the
    // batch it added (its commit entry first).
    val restored = backup.keptFiles.sortBy(f => f == logs.offsetFile(offsetBatch))
    restored.foreach(f => logs.replace(f, logs.read(backup.kept(f))))
    added.foreach { batch =>
      batch.undo(logs)
      createdPartitionDirs(logs, JsonMethods.parse(backup.read("plan.json"))).foreach(logs.fs.delete(_, true))
    }
    def partitions(name: String) = number(name).fold(0)(_.toInt)
    val report = MigrationReport(root, to, from, committed, committed + 1, dryRun = false, switched = true,
      Nil, Some(backup.dir.toString), rerun, partitions("partitionsTo"), partitions("partitionsFrom"),
      seconds(startedNs), action = "undo")
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

  /**
   * Under checkpoint format 2, `commits/<last>` names the checkpoint id Spark loads each store
   * partition at: the source is read at those ids. Without rescaling the copies carry the same ids,
   * so the commit log needs no change and the switch stays one atomic write; when rescaling they
   * land on new ids as a new batch (`RescaleBatch`) whose commit entry names them. Either way only
   * txstate takes a chosen id (Spark's RocksDB provider picks its own, the HDFS provider keeps
   * none), so other destinations are refused. Returns each store's ids by partition, or None under
   * format 1.
   */
  private def formatV2Ids(logs: CheckpointLogs, entry: OffsetLogEntry, last: Long, stores: Seq[StoreToCopy],
      to: ProviderChoice): Option[StoreToCopy => Int => Option[String]] = {
    val ids = CommitLogIds.parse(logs.read(logs.commitFile(last)))
    val root = logs.root.toString
    if (!entry.conf.get(checkpointFormatKey).contains("2") && ids.isEmpty) None
    else {
      if (to != ProviderChoice.TxState) {
        throw MigrationErrors.checkpointFormatV2(root, last, s"${to.name} cannot take given ids (Spark's RocksDB " +
          "provider picks its own, the HDFS provider keeps none), so the commit log would have to change in a " +
          "second step that cannot be atomic with the switch. Migrate to txstate, which takes them.")
      }
      // Every id must be there before anything is written.
      for (store <- stores; p <- store.partitions if ids.of(store.operatorId, p, store.storeIndex).isEmpty) {
        throw MigrationErrors.missingCheckpointId(root, last, store.label, p)
      }
      Some(store => p => ids.of(store.operatorId, p, store.storeIndex))
    }
  }

  /**
   * The migration whose in-place rescale was killed between writing its batch's offset entry
   * (the newest of `uncommitted`) and its commit entry, if that is what `uncommitted` is.
   */
  private def interruptedRescale(logs: CheckpointLogs, uncommitted: Seq[Long]): Option[MigrationBackup] =
    MigrationBackup.all(logs, hadoopConf).lastOption.filter { b =>
      !b.has("switched.json") && !b.has("undone.json") && b.has("plan.json") &&
        (JsonMethods.parse(b.read("plan.json")) \ "rescaleBatch" match {
          case JInt(batch) => uncommitted.lastOption.contains(batch.toLong) && !logs.commitBatches.contains(batch.toLong)
          case _ => false
        })
    }

  /**
   * The directories of the partitions a rescale added (`state/<op>/<p>` at or above the partition
   * count the plan recorded): none existed before, since the inventory refuses stray partitions.
   */
  private def createdPartitionDirs(logs: CheckpointLogs, plan: JValue): Seq[Path] = {
    import org.json4s.JArray
    val created = plan \ "stores" match {
      case JArray(stores) => stores.flatMap { store =>
        (store \ "operatorId", store \ "partitions", store \ "targetPartitions") match {
          case (JInt(op), JInt(count), JArray(targets)) =>
            targets.collect { case JInt(p) if p >= count => new Path(logs.root, s"state/$op/$p") }
          case _ => Nil
        }
      }
      case _ => Nil
    }
    created.distinct.filter(logs.fs.exists)
  }

  private def loadable(className: String): Unit =
    try Class.forName(className, false, Thread.currentThread().getContextClassLoader)
    catch { case NonFatal(e) => throw MigrationErrors.providerUnavailable(className, e) }

  /** Runs `units` (what, work) of one store with progress, and sums their digests into its report. */
  private def reportFor(store: StoreToCopy, units: Seq[(String, () => StoreDigest)]): StoreReport = {
    val startedNs = System.nanoTime()
    val digest = units.foldLeft(StoreDigest.empty) { case (sum, (unit, work)) =>
      val what = s"${store.label}, $unit"
      progress.starting(what)
      val d = work()
      progress.finished(what, d)
      sum + d
    }
    StoreReport(store.operatorId, store.operatorName, store.storeName, store.numPartitions, digest.rows, digest.hash,
      seconds(startedNs))
  }

  private def planJson(root: String, from: String, to: ProviderChoice, last: Long, version: Long,
      rewrites: Seq[String], oldPartitions: Int, newPartitions: Int, plans: Seq[StorePlan],
      newBatch: Option[RescaleBatch]): String = {
    import org.json4s.{JArray, JObject}
    JsonMethods.pretty(JObject(newBatch.map(b => "rescaleBatch" -> JInt(b.batch)).toList ++ List(
      "checkpoint" -> JString(root), "from" -> JString(from), "to" -> JString(to.className),
      "lastCommittedBatch" -> JInt(last), "stateVersion" -> JInt(version),
      "partitionsFrom" -> JInt(oldPartitions), "partitionsTo" -> JInt(newPartitions),
      "rewrites" -> JArray(rewrites.map(JString(_)).toList),
      "stores" -> JArray(plans.map { plan =>
        val s = plan.store
        JObject("operatorId" -> JInt(s.operatorId), "operatorName" -> JString(s.operatorName),
          "storeName" -> JString(s.storeName), "partitions" -> JInt(s.numPartitions),
          "partitionsWithState" -> JArray(s.partitions.map(JInt(_)).toList),
          "targetPartitions" -> JArray(plan.units.flatMap(_._3).map(JInt(_)).toList),
          "keySchema" -> JString(s.keySchema.simpleString), "valueSchema" -> JString(s.valueSchema.simpleString),
          "numColsPrefixKey" -> JInt(s.numColsPrefixKey))
      }.toList))))
  }

  private def seconds(startedNs: Long): Double = (System.nanoTime() - startedNs) / 1e9

  private val shufflePartitionsKey = "spark.sql.shuffle.partitions"
  private val checkpointFormatKey = "spark.sql.streaming.stateStore.checkpointFormatVersion"
}
