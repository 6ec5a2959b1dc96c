package txstate.query.source

import java.util

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.{LocalScan, Scan, ScanBuilder}
import org.apache.spark.sql.types.{StringType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String

import txstate.query.ProtocolCalls

/**
 * The query protocol (docs/query-protocol.md) carried by the data source: one call, one JSON
 * request, one row holding the JSON response. It runs on the driver when the read is planned, so a
 * client without py4j (Spark Connect) gets exactly what the py4j gateway answers.
 */
private[source] final class ProtocolTable(spark: SparkSession, call: String, request: String)
    extends Table with SupportsRead {
  override def name(): String = s"txstate query protocol ($call)"
  override def schema(): StructType = ProtocolTable.schema
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new LocalScan {
    override def readSchema(): StructType = ProtocolTable.schema
    override def description(): String = s"txstate query protocol ($call)"
    override def rows(): Array[InternalRow] = {
      val response = call match {
        case "describe" => ProtocolCalls.describe(spark, request)
        case "execute" => ProtocolCalls.execute(spark, request)
        case "follow" => ProtocolCalls.follow(spark, request)
        case "followerStatus" => ProtocolCalls.followerStatus(request)
        case "unfollow" => ProtocolCalls.unfollow(request)
        case _ => ProtocolCalls.queryTargetOfRun(spark, request)
      }
      Array(InternalRow(UTF8String.fromString(response)))
    }
  }: Scan
}

private[source] object ProtocolTable {
  val schema: StructType = StructType(Seq(StructField("response", StringType, nullable = false)))
}
