package example

import org.apache.spark.api.plugin.SparkPlugin
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

import txstate.spark.{TxStatePlugin, TxStateStoreProvider}

/** What an application compiles against the published artifact: the provider and plugin it names. */
object TxStateChoice {
  val provider: Class[_ <: StateStoreProvider] = classOf[TxStateStoreProvider]
  val plugin: Class[_ <: SparkPlugin] = classOf[TxStatePlugin]

  /** The Spark settings that select them, as a user's job would set them. */
  def settings: Map[String, String] = Map(
    "spark.sql.streaming.stateStore.providerClass" -> provider.getName,
    "spark.plugins" -> plugin.getName)
}
