package txstate.query.source

import java.util

import scala.annotation.nowarn

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * `spark.read.format("txstate")`: a store's committed state as a table (README, "State as a
 * DataFrame"; docs/ARCHITECTURE.md, "The txstate data source"). With option `protocol` it carries
 * the query protocol instead, for Python clients without py4j (Spark Connect).
 */
final class TxStateSource extends TableProvider with DataSourceRegister {
  override def shortName(): String = "txstate"

  // TableProvider still asks for a StructType, which Table.schema() gives (deprecated for columns()).
  @nowarn("cat=deprecation")
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = table(options).schema()

  override def getTable(schema: StructType, partitioning: Array[Transform], properties: util.Map[String, String]): Table =
    table(properties)

  private def table(options: util.Map[String, String]): Table = {
    val parsed = SourceOptions.parse(options)
    val spark = SparkSession.active
    parsed.protocol match {
      case Some((call, request)) => new ProtocolTable(spark, call, request)
      case None => new StateTable(spark, SourceTargets.resolve(spark, parsed), parsed)
    }
  }
}
