package txstate.migrate

import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

/** An empty store at a chosen version: from Spark 4.2 every provider opens one (`loadEmpty`). */
private[migrate] object EmptyStoreAt {
  def open(provider: StateStoreProvider, version: Long, destination: String): StateStore =
    provider.getStore(version, None, true, true) // forceSnapshotOnCommit, loadEmpty
}
