package txstate.spark

import com.codahale.metrics.{Counter, Gauge, Metric}

import txstate.store.{ExecutorStoreFigures, ExecutorStores}

/**
 * The executor-level metrics [[TxStatePlugin]] registers in Spark's metrics system, one row each.
 * Spark names them `<namespace>.<executorId>.plugin.txstate.spark.TxStatePlugin.<name>`
 * (docs/operations.md, "Executor metrics"); the names here are the only list of them (the docs'
 * reference and conf/grafana-txstate-executors.json are checked against this file).
 */
object ExecutorMetrics {
  /** A gauge reads a level now; a counter only grows while the executor JVM lives. */
  sealed trait Kind
  case object Level extends Kind
  case object Count extends Kind

  final case class ExecutorMetric(name: String, kind: Kind, description: String, read: () => Long) {
    /** The Dropwizard metric Spark's sinks report: a gauge's value, or a counter's count. */
    def toMetric: Metric = kind match {
      case Level => new Gauge[java.lang.Long] { override def getValue: java.lang.Long = read() }
      case Count => new Counter { override def getCount: Long = read() }
    }
  }

  private def stores: ExecutorStoreFigures = ExecutorStores.figures

  val all: Seq[ExecutorMetric] = Seq(
    ExecutorMetric("nativeMemoryUsedBytes", Level,
      "RocksDB memory of the executor's stores under its budget (shared block cache with the memtables charged to it)",
      () => ExecutorNativeMemory.usedBytes),
    ExecutorMetric("nativeMemoryLimitBytes", Level,
      "the executor's RocksDB memory budget while stores use it (maxNativeMemoryMB; 0: none)",
      () => ExecutorNativeMemory.limitBytes),
    ExecutorMetric("heapUsedBytes", Level,
      "heap of the executor's stores under its budget (hot-state cache, kept undo, running buffers)",
      () => ExecutorHeapMemory.usedBytes),
    ExecutorMetric("heapLimitBytes", Level, "the executor's heap budget (maxHeapMemoryMB; 0: none)",
      () => ExecutorHeapMemory.limitBytes),
    ExecutorMetric("undoDropped", Count,
      "undo of last commits dropped to stay under the heap budget (a re-run of that batch reloads)",
      () => stores.undoDropped),
    ExecutorMetric("openStoreInstances", Level, "store instances open on the executor, each a local RocksDB",
      () => stores.openInstances.toLong),
    ExecutorMetric("earlyCommits", Count, "early commits that moved uncommitted writes out of memory",
      () => stores.earlyCommits),
    ExecutorMetric("backgroundWriteBacklog", Level, "background writes to RocksDB submitted and not yet finished",
      () => stores.backgroundWritesWaiting),
    ExecutorMetric("maxSnapshotLagVersions", Level,
      "the most versions an open store committed since its newest uploaded snapshot",
      () => stores.maxSnapshotLagVersions))
}
