package txstate.query

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.ScalaLibrary.CollectionConverters._

/** The JSON form of internal values that crosses py4j (docs/query-protocol.md). */
final class InternalJsonTest extends AnyFunSuite {
  private val schema = new StructType()
    .add("bool", BooleanType).add("byte", ByteType).add("short", ShortType).add("int", IntegerType)
    .add("long", LongType).add("float", FloatType).add("double", DoubleType).add("string", StringType)
    .add("binary", BinaryType).add("decimal", DecimalType(12, 3)).add("date", DateType)
    .add("timestamp", TimestampType).add("ntz", TimestampNTZType)
    .add("struct", new StructType().add("start", TimestampType).add("end", TimestampType))
    .add("array", ArrayType(StringType)).add("map", MapType(StringType, LongType)).add("nothing", StringType)

  private val row = Row(true, 7.toByte, -3.toShort, 42, 1L << 40, 1.5f, Double.NaN, "héllo", Array[Byte](0, -1, 2),
    BigDecimal("12345.678").bigDecimal, java.sql.Date.valueOf("2026-11-22"), java.sql.Timestamp.valueOf("2026-11-22 05:00:00.123456"),
    java.time.LocalDateTime.parse("2026-11-22T05:00:00.5"),
    Row(java.sql.Timestamp.valueOf("2026-11-22 05:00:00"), java.sql.Timestamp.valueOf("2026-11-22 05:10:00")),
    Seq("a", null, "c"), Map("k" -> 1L), null)

  test("every supported type survives JSON and back") {
    val internal = CatalystTypeConverters.createToCatalystConverter(schema)(row).asInstanceOf[InternalRow]
    val json = new ObjectMapper().writeValueAsString(InternalJson.writeRow(internal, schema))
    assert(json.contains("\"NaN\"") && json.contains("\"12345.678\""))
    val back = InternalJson.readRow(new ObjectMapper().readTree(json), schema, "row")
    val external = CatalystTypeConverters.createToScalaConverter(schema)(back).asInstanceOf[Row]
    row.toSeq.zip(external.toSeq).zip(schema.fieldNames).foreach {
      case ((a: Array[Byte], b: Array[Byte]), _) => assert(a.toSeq == b.toSeq)
      case ((a: Double, b: Double), _) if a.isNaN => assert(b.isNaN)
      case ((a, b), name) => assert(a == b, s"column $name")
    }
  }

  test("named rows: every column by its name, structs inside them too, and back") {
    val internal = CatalystTypeConverters.createToCatalystConverter(schema)(row).asInstanceOf[InternalRow]
    val named = InternalJson.writeRow(internal, schema, named = true)
    assert(named.isObject && named.fieldNames().asScala.toSeq == schema.fieldNames.toSeq)
    assert(named.get("struct").fieldNames().asScala.toSeq == Seq("start", "end"))
    assert(named.get("map").fieldNames().asScala.toSeq == Seq("keys", "values") && named.get("nothing").isNull)
    val positional = InternalJson.writeRow(internal, schema)
    assert(positional.isArray && positional.get(0).asBoolean && positional.get(13).isArray)
    val json = new ObjectMapper().writeValueAsString(named)
    val back = InternalJson.readRow(new ObjectMapper().readTree(json), schema, "row")
    assert(new ObjectMapper().writeValueAsString(InternalJson.writeRow(back, schema, named = true)) == json)
  }

  test("a value of the wrong type names the column") {
    val e = intercept[IllegalArgumentException](
      InternalJson.readRow(new ObjectMapper().readTree("""["x"]"""), new StructType().add("n", LongType), "key"))
    assert(e.getMessage.contains("key.n") && e.getMessage.contains("bigint"))
  }
}
