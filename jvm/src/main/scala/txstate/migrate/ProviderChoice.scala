package txstate.migrate

/** The providers migrate moves state between, by the name users type (`--to txstate`). */
sealed abstract class ProviderChoice(val name: String, val className: String)

object ProviderChoice {
  case object TxState extends ProviderChoice("txstate", "txstate.spark.TxStateStoreProvider")
  case object RocksDB extends ProviderChoice("rocksdb",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
  case object Hdfs extends ProviderChoice("hdfs",
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")

  val all: Seq[ProviderChoice] = Seq(TxState, RocksDB, Hdfs)

  /** Spark's setting, recorded in every offset log entry; absent means Spark's default (HDFS). */
  val settingKey = "spark.sql.streaming.stateStore.providerClass"

  def byName(name: String): ProviderChoice =
    all.find(_.name.equalsIgnoreCase(name.trim)).getOrElse(throw MigrationErrors.unknownProvider(name, all.map(_.name)))

  /** The name for a class, or the class itself for a provider migrate does not know. */
  def describe(className: String): String = all.find(_.className == className).fold(className)(_.name)
}
