package txstate.spark

import org.apache.spark.sql.execution.streaming.state.StateStore

/**
 * Lets the migration land a txstate store's commit on a checkpoint id it chooses. Under Spark's
 * checkpoint format v2 the commit log names, per partition and store, the id each store must load;
 * a migrated store that takes the id the log already names needs no change to the log, so the
 * migration's switch stays one atomic write. Spark's own providers pick their ids themselves.
 */
object CheckpointIdChoice {
  /** Whether `store` can take a chosen id (only txstate's can). */
  def supported(store: StateStore): Boolean = store.isInstanceOf[TxStateStore]

  def use(store: StateStore, checkpointId: String): Unit = store match {
    case tx: TxStateStore => tx.useCheckpointId(checkpointId)
    case other => throw new IllegalArgumentException(
      s"${other.getClass.getName} chooses its own checkpoint ids; only txstate's stores take a given one")
  }
}
