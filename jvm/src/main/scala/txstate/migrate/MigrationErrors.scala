package txstate.migrate

/**
 * Every error the migration tool raises. Each names the checkpoint, file or setting involved and
 * says what to do; the class in brackets lets the Python client recognise it.
 */
object MigrationErrors {
  private def refused(kind: String, message: String): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_MIGRATION_$kind] $message")

  def badArgument(what: String, problem: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_MIGRATION_BAD_ARGUMENT] $what $problem")

  def noCheckpoint(root: String): IllegalStateException =
    refused("NO_CHECKPOINT", s"$root is not a streaming checkpoint (it has no offsets/ directory). Pass the " +
      "checkpointLocation the query was started with.")

  def nothingCommitted(root: String): IllegalStateException =
    refused("NOTHING_COMMITTED", s"checkpoint $root has no committed batch (commits/ is empty): there is no state " +
      "to migrate. Start the query on the provider you want instead.")

  def uncommittedOffsets(root: String, lastCommitted: Long, uncommitted: Seq[Long]): IllegalStateException =
    refused("UNCOMMITTED_OFFSETS", s"checkpoint $root has offsets for batch(es) ${uncommitted.mkString(", ")} " +
      s"without a commit (the last committed batch is $lastCommitted): the query stopped in the middle of a batch. " +
      "Either restart the query once on its current provider so it finishes that batch, then stop it and migrate, " +
      s"or run migrate with --rollback-uncommitted to migrate the state of batch $lastCommitted; the query then " +
      "re-runs the unfinished batch, with the same id and input, on the destination provider.")

  def severalUncommitted(root: String, lastCommitted: Long, uncommitted: Seq[Long]): IllegalStateException =
    refused("UNCOMMITTED_OFFSETS", s"checkpoint $root has offsets for batch(es) ${uncommitted.mkString(", ")} " +
      s"after its last committed batch $lastCommitted, more than the one batch Spark re-runs at restart (or not " +
      s"the next one): --rollback-uncommitted cannot keep them consistent. Restart the query once on its current " +
      "provider so it finishes those batches, stop it, then migrate.")

  def looksActive(root: String, file: String, ageSeconds: Long, windowSeconds: Long): IllegalStateException =
    refused("QUERY_ACTIVE", s"the query of checkpoint $root looks active: $file was written ${ageSeconds}s ago " +
      s"(less than $windowSeconds s). Stop the query (query.stop()) and wait for it to end; if it has already " +
      "stopped, pass --active-window 0 to skip this check.")

  def unsupportedOperator(root: String, operatorId: Long, name: String, why: String): IllegalStateException =
    refused("UNSUPPORTED_OPERATOR", s"operator $operatorId ($name) of checkpoint $root cannot be migrated: $why")

  def checkpointFormatV2(root: String, lastCommitted: Long, why: String): IllegalStateException =
    refused("CHECKPOINT_FORMAT", s"checkpoint $root uses state checkpoint format version 2: commits/$lastCommitted " +
      s"names the checkpoint id each partition's store must load, and the migrated stores must carry those ids. " +
      s"$why")

  def missingCheckpointId(root: String, lastCommitted: Long, store: String, partition: Int): IllegalStateException =
    refused("CHECKPOINT_FORMAT", s"checkpoint $root uses state checkpoint format version 2 but commits/$lastCommitted " +
      s"names no checkpoint id for $store, partition $partition. The commit log is incomplete or damaged; restore " +
      "it before migrating.")

  def providerUnavailable(className: String, cause: Throwable): IllegalStateException =
    refused("PROVIDER_UNAVAILABLE", s"the state store provider class $className cannot be loaded in this JVM " +
      s"(${cause.getClass.getSimpleName}: ${cause.getMessage}). Put its jar on the classpath (--jars) and run again.")

  def unknownProvider(name: String, known: Iterable[String]): IllegalArgumentException =
    badArgument("--to", s"is '$name'; expected one of ${known.mkString(", ")}")

  def alreadyThere(root: String, provider: String): IllegalStateException =
    refused("NOTHING_TO_DO", s"checkpoint $root already runs on $provider; nothing to migrate.")

  def rescaleInPlace(root: String, provider: String, partitions: Int): IllegalStateException =
    refused("RESCALE_IN_PLACE", s"checkpoint $root runs on $provider: migrate rescales in place only a query " +
      s"that runs on txstate. Rescale on the way to txstate (--to txstate --partitions $partitions), or on the " +
      "way to another provider.")

  def rescaleUnfinishedBatch(root: String, lastCommitted: Long, unfinished: Long): IllegalStateException =
    refused("UNCOMMITTED_OFFSETS", s"checkpoint $root has an unfinished batch $unfinished after its last committed " +
      s"batch $lastCommitted, and this rescale adds its new partitions as batch ${lastCommitted + 1}. Restart the " +
      "query once so it finishes that batch, stop it, then rescale.")

  def interruptedRescale(root: String, batch: Long, backup: String): IllegalStateException =
    refused("INTERRUPTED_RESCALE", s"checkpoint $root has the offset entry of batch $batch, which an in-place " +
      s"rescale added (plan in $backup), but no commit for it: the rescale stopped while switching. Run migrate " +
      "--undo to remove that batch and go back to the original partitions (then rescale again if you want).")

  def misplaced(store: String, from: Int, placed: Int, targets: Seq[Int]): IllegalStateException =
    refused("PLACEMENT", s"$store: a key of partition $from was placed in partition $placed, not one of " +
      s"${targets.mkString(", ")}. Nothing was switched; report this with the plan in _txstate_migration/.")

  def cannotRescale(store: String, why: String): IllegalStateException =
    refused("CANNOT_RESCALE", s"$store: $why. Migrate without --partitions to keep the partition count.")

  def needsNewerSpark(destination: String, line: String): IllegalStateException =
    refused("NEEDS_NEWER_SPARK", s"writing state with $destination needs Spark 4.2 or newer: Spark $line's " +
      "providers cannot open an empty store at a chosen version. Run migrate with the txstate jar for Spark 4.2+ " +
      "(the checkpoint files are the same), or migrate to txstate.")

  def missingSchema(store: String, path: String): IllegalStateException =
    refused("MISSING_SCHEMA", s"$store has no schema file at $path, so its rows cannot be read. Run the query " +
      "once on a Spark version that writes state schema files (Spark 3.x or newer), then migrate.")

  def badSchemaFile(path: String, problem: String): IllegalStateException =
    refused("BAD_SCHEMA_FILE", s"the state schema file $path cannot be read: $problem.")

  def partitionsMismatch(store: String, expected: Int, found: Seq[Int]): IllegalStateException =
    refused("PARTITIONS", s"$store should have partitions 0..${expected - 1} but the checkpoint has directories " +
      s"for ${if (found.isEmpty) "none" else found.mkString(", ")}. The checkpoint is incomplete or damaged; restore " +
      "it before migrating. Directories beyond the partition count may be an earlier rescale's: one that shrank " +
      "the query keeps the old partitions for --undo (once you no longer need it, delete those state/<op>/<p>), " +
      "and one that was killed before its switch is cleaned up by migrate --undo.")

  def verificationFailed(store: String, source: String, destination: String): IllegalStateException =
    refused("VERIFICATION_FAILED", s"$store: the destination holds $destination but the source held $source. " +
      "Nothing was switched; the checkpoint still runs on its original provider. Report this with the plan in " +
      "_txstate_migration/.")

  def metadataChanged(file: String): IllegalStateException =
    refused("CHECKPOINT_CHANGED", s"$file changed while migrate was running: a query is writing this checkpoint. " +
      "Nothing was switched. Stop the query, then run migrate again.")

  def nothingToUndo(root: String): IllegalStateException =
    refused("NOTHING_TO_UNDO", s"checkpoint $root has no completed migration to undo (no " +
      "_txstate_migration/<time>/switched marker).")

  def undoAfterNewBatches(root: String, migratedAt: Long, newest: Long): IllegalStateException =
    refused("UNDO_TOO_LATE", s"the query of checkpoint $root has run batches after the migration (it was " +
      s"migrated at batch $migratedAt, the newest offsets are for batch $newest): the original provider's state " +
      "does not hold their changes, so undoing would lose them. Migrate again instead, to the provider you want.")
}
