package txstate.spark

import org.apache.spark.sql.execution.streaming.state.{StateStoreCustomMetric, StateStoreCustomSizeMetric, StateStoreCustomSumMetric, StateStoreCustomTimingMetric}

/**
 * The custom metrics each store reports; they show in
 * `StreamingQueryProgress.stateOperators[].customMetrics` and in the SQL UI, summed over partitions.
 */
object TxStateMetrics {
  val commitLatencyMs = StateStoreCustomTimingMetric("txstateCommitLatencyMs",
    "txstate: time to write the changelog and commit locally (ms)")
  val changelogBytes = StateStoreCustomSizeMetric("txstateChangelogBytes", "txstate: changelog bytes written")
  val loadLatencyMs = StateStoreCustomTimingMetric("txstateLoadLatencyMs",
    "txstate: time to make the requested version current (ms)")
  val changelogsReplayed = StateStoreCustomSumMetric("txstateChangelogsReplayed",
    "txstate: changelogs replayed while loading")
  val rollbacks = StateStoreCustomSumMetric("txstateRollbacks",
    "txstate: loads served by undoing the last local commit")
  val rebuilds = StateStoreCustomSumMetric("txstateRebuilds", "txstate: loads rebuilt from the checkpoint")
  val uncommittedEntries = StateStoreCustomSumMetric("txstateUncommittedEntriesPeak",
    "txstate: peak uncommitted entries in the batch")
  val uncommittedBytes = StateStoreCustomSizeMetric("txstateUncommittedBytesPeak",
    "txstate: peak uncommitted bytes in the batch")
  val nativeMemoryBytes = StateStoreCustomSizeMetric("txstateNativeMemoryBytes",
    "txstate: RocksDB memtables and block cache (under the executor's budget, the store's even share of it)")
  // Executor-wide: every store of an executor reports the same value, so read the maximum (the SQL
  // UI shows it), not the sum the progress shows.
  val executorNativeMemoryBytes = StateStoreCustomSizeMetric("txstateExecutorNativeMemoryBytes",
    "txstate: RocksDB memory of the executor's stores under its budget (the shared block cache with the memtables charged to it)")
  val executorNativeMemoryLimitBytes = StateStoreCustomSizeMetric("txstateExecutorNativeMemoryLimitBytes",
    "txstate: the executor's RocksDB memory budget (maxNativeMemoryMB; 0 = off)")
  // Executor-wide too (read the maximum): the heap budget's count and its limit.
  val executorHeapBytes = StateStoreCustomSizeMetric("txstateExecutorHeapBytes",
    "txstate: heap of the executor's stores under its budget (hot-state cache, kept undo, running buffers)")
  val executorHeapLimitBytes = StateStoreCustomSizeMetric("txstateExecutorHeapLimitBytes",
    "txstate: the executor's heap budget (maxHeapMemoryMB; 0 = off)")
  // Per store, summed: each store reports its own undo dropped since its previous batch.
  val undoDropped = StateStoreCustomSumMetric("txstateUndoDropped",
    "txstate: undo of a last commit dropped to keep the executor under its heap budget (a re-run of that batch reloads)")

  val earlyCommits = StateStoreCustomSumMetric("txstateEarlyCommits",
    "txstate: early commits that moved uncommitted writes out of memory")
  val earlyCommitEntries = StateStoreCustomSumMetric("txstateEarlyCommitEntries",
    "txstate: uncommitted entries moved out of memory by early commits")
  val earlyCommitBytes = StateStoreCustomSizeMetric("txstateEarlyCommitBytes",
    "txstate: changelog segment bytes written by early commits")
  val snapshotUploadedBytes = StateStoreCustomSizeMetric("txstateSnapshotUploadedBytes",
    "txstate: snapshot bytes uploaded since the previous batch")
  val snapshotReusedBytes = StateStoreCustomSizeMetric("txstateSnapshotReusedBytes",
    "txstate: snapshot bytes shared with earlier snapshots instead of uploaded")
  val snapshotLagVersions = StateStoreCustomSumMetric("txstateSnapshotLagVersions",
    "txstate: versions committed since the newest uploaded snapshot (summed over stores)")

  val expiredEntries = StateStoreCustomSumMetric("txstateExpiredEntries",
    "txstate: rows state TTL expired in the batch")
  // A timing metric, so the SQL UI shows its maximum over partitions (the progress's value is their sum).
  val oldestEntryAgeMs = StateStoreCustomTimingMetric("txstateOldestEntryAgeMs",
    "txstate: with state TTL on, age of the oldest row against the batch's timestamp (ms)")

  // The hot-state cache: its hit rate is hits / (hits + misses); bytes are this store's entries (summed: the executors' use).
  val cacheHits = StateStoreCustomSumMetric("txstateCacheHits", "txstate: reads answered by the hot-state cache")
  val cacheMisses = StateStoreCustomSumMetric("txstateCacheMisses", "txstate: reads the hot-state cache passed to RocksDB")
  val cacheEvictions = StateStoreCustomSumMetric("txstateCacheEvictions",
    "txstate: hot-state cache entries dropped to stay within its budget")
  val cacheBytes = StateStoreCustomSizeMetric("txstateCacheBytes", "txstate: heap bytes of hot-state cache entries")

  // Named as Spark's contract names it (its HDFS provider reports the same metric; SPARK-54063).
  val forceSnapshotCount = StateStoreCustomSumMetric("forceSnapshotCount",
    "commits that staged a snapshot because Spark forced one (forceSnapshotOnCommit)")

  val all: Seq[StateStoreCustomMetric] = Seq(commitLatencyMs, changelogBytes, loadLatencyMs, changelogsReplayed,
    rollbacks, rebuilds, uncommittedEntries, uncommittedBytes, nativeMemoryBytes, earlyCommits, earlyCommitEntries,
    earlyCommitBytes, snapshotUploadedBytes, snapshotReusedBytes, snapshotLagVersions, forceSnapshotCount,
    expiredEntries, oldestEntryAgeMs, cacheHits, cacheMisses, cacheEvictions, cacheBytes, executorNativeMemoryBytes,
    executorNativeMemoryLimitBytes, executorHeapBytes, executorHeapLimitBytes, undoDropped)
}
