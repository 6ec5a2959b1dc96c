package txstate.bench

import org.apache.spark.SparkEnv
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef

/** Starts the driver's StateStoreCoordinator, as a running streaming query has it (the signature of Spark 4.0 and older). */
object DriverCoordinator {
  def start(spark: SparkSession): Unit = StateStoreCoordinatorRef.forDriver(SparkEnv.get)
}
