package txstate.migrate

import org.apache.spark.SPARK_VERSION
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

import txstate.spark.TxStateStoreProvider

/**
 * An empty store at a chosen version. Spark 4.0 and 4.1 have no such call (`loadEmpty` came in
 * 4.2), so only txstate's own provider, which has it on every line, can be a destination here.
 */
private[migrate] object EmptyStoreAt {
  def open(provider: StateStoreProvider, version: Long, destination: String): StateStore = provider match {
    case ours: TxStateStoreProvider => ours.getStore(version, None, forceSnapshotOnCommit = true, loadEmpty = true)
    case _ => throw MigrationErrors.needsNewerSpark(destination, SPARK_VERSION)
  }
}
