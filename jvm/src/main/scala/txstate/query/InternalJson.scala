package txstate.query

import java.util.Base64

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import txstate.compat.ScalaLibrary.CollectionConverters._

/**
 * Spark's internal values <-> JSON, as docs/query-protocol.md specifies: what crosses py4j between
 * `txstate_spark.query` and [[ProtocolCalls]]. A row (and a struct inside one) is read from an array
 * in schema order or from an object naming each column once; it is written as an array, or, for a
 * request that asks for named rows, as an object by column name.
 */
private[query] object InternalJson {
  private val nodes = JsonNodeFactory.instance

  def readRow(node: JsonNode, schema: StructType, what: String): InternalRow = {
    if (node != null && node.isObject) return readNamedRow(node, schema, what)
    if (node == null || !node.isArray || node.size != schema.length) {
      throw bad(what, s"expected an array of ${schema.length} values for ${schema.simpleString} (or an object " +
        s"naming ${columnList(schema)}), got $node")
    }
    new GenericInternalRow(schema.fields.zipWithIndex.map { case (f, i) => read(node.get(i), f.dataType, s"$what.${f.name}") })
  }

  /** `{"user": "u1", "day": 3}`: every column by its name, once; an unknown or a missing name is refused naming them all. */
  private def readNamedRow(node: JsonNode, schema: StructType, what: String): InternalRow = {
    val names = node.fieldNames().asScala.toList
    val unknown = names.filterNot(schema.fieldNames.contains)
    val missing = schema.fieldNames.filterNot(names.contains).toList
    if (unknown.nonEmpty || missing.nonEmpty) {
      val found = (if (unknown.isEmpty) Nil else Seq(s"has no column ${quoted(unknown)}")) ++
        (if (missing.isEmpty) Nil else Seq(s"is missing ${quoted(missing)}"))
      throw bad(what, s"${found.mkString(" and ")}; ${schema.simpleString} has the columns ${columnList(schema)}: " +
        s"name each of them once (e.g. ${example(schema)}), or send an array of ${schema.length} values in that order")
    }
    new GenericInternalRow(schema.fields.map(f => read(node.get(f.name), f.dataType, s"$what.${f.name}")))
  }

  private def quoted(names: Seq[String]): String = names.map(n => s"'$n'").mkString(", ")
  private def columnList(schema: StructType): String = schema.fieldNames.mkString(", ")
  private def example(schema: StructType): String = schema.fieldNames.map(n => s""""$n": ...""").mkString("{", ", ", "}")

  /** The row as an array in schema order; `named`: as an object by column name (structs inside it too). */
  def writeRow(row: InternalRow, schema: StructType, named: Boolean = false): JsonNode =
    if (named) {
      val out = nodes.objectNode()
      schema.fields.zipWithIndex.foreach { case (f, i) =>
        out.set[JsonNode](f.name, write(if (row.isNullAt(i)) null else row.get(i, f.dataType), f.dataType, named))
      }
      out
    } else {
      val out = nodes.arrayNode()
      schema.fields.zipWithIndex.foreach { case (f, i) =>
        out.add(write(if (row.isNullAt(i)) null else row.get(i, f.dataType), f.dataType, named))
      }
      out
    }

  private def read(node: JsonNode, dataType: DataType, what: String): Any = {
    if (node == null || node.isNull) return null
    def need(ok: Boolean): Unit = if (!ok) throw bad(what, s"expected ${dataType.simpleString}, got $node")
    dataType match {
      case BooleanType => need(node.isBoolean); node.booleanValue
      case ByteType => need(node.canConvertToInt); node.intValue.toByte
      case ShortType => need(node.canConvertToInt); node.intValue.toShort
      case IntegerType | DateType | _: YearMonthIntervalType => need(node.canConvertToInt); node.intValue
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType =>
        need(node.canConvertToLong); node.longValue
      case FloatType => floating(node, what, dataType).toFloat
      case DoubleType => floating(node, what, dataType)
      case _: StringType => need(node.isTextual); UTF8String.fromString(node.textValue)
      case BinaryType => need(node.isTextual); Base64.getDecoder.decode(node.textValue)
      case d: DecimalType =>
        need(node.isTextual || node.isNumber)
        Decimal(BigDecimal(node.asText), d.precision, d.scale)
      case s: StructType => readRow(node, s, what)
      case ArrayType(element, _) =>
        need(node.isArray)
        new GenericArrayData(node.elements().asScala.map(read(_, element, s"$what[]")).toArray[Any])
      case MapType(k, v, _) =>
        need(node.isObject && node.has("keys") && node.has("values"))
        val keys = node.get("keys").elements().asScala.map(read(_, k, s"$what.key")).toArray[Any]
        val values = node.get("values").elements().asScala.map(read(_, v, s"$what.value")).toArray[Any]
        ArrayBasedMapData(keys, values)
      case NullType => null
      case other => throw bad(what, s"columns of type ${other.simpleString} cannot be queried from Python")
    }
  }

  private def floating(node: JsonNode, what: String, dataType: DataType): Double =
    if (node.isNumber) node.doubleValue
    else if (node.isTextual) node.textValue match {
      case "NaN" => Double.NaN
      case "Infinity" => Double.PositiveInfinity
      case "-Infinity" => Double.NegativeInfinity
      case other => throw bad(what, s"expected ${dataType.simpleString}, got '$other'")
    }
    else throw bad(what, s"expected ${dataType.simpleString}, got $node")

  private def write(value: Any, dataType: DataType, named: Boolean): JsonNode = if (value == null) nodes.nullNode() else dataType match {
    case BooleanType => nodes.booleanNode(value.asInstanceOf[Boolean])
    case ByteType => nodes.numberNode(value.asInstanceOf[Byte].toInt)
    case ShortType => nodes.numberNode(value.asInstanceOf[Short].toInt)
    case IntegerType | DateType | _: YearMonthIntervalType => nodes.numberNode(value.asInstanceOf[Int])
    case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => nodes.numberNode(value.asInstanceOf[Long])
    case FloatType => floatingNode(value.asInstanceOf[Float].toDouble)
    case DoubleType => floatingNode(value.asInstanceOf[Double])
    case _: StringType => nodes.textNode(value.toString)
    case BinaryType => nodes.textNode(Base64.getEncoder.encodeToString(value.asInstanceOf[Array[Byte]]))
    case _: DecimalType => nodes.textNode(value.asInstanceOf[Decimal].toJavaBigDecimal.toPlainString)
    case s: StructType => writeRow(value.asInstanceOf[InternalRow], s, named)
    case ArrayType(element, _) =>
      val array = value.asInstanceOf[ArrayData]
      val out = nodes.arrayNode()
      (0 until array.numElements()).foreach(i => out.add(write(if (array.isNullAt(i)) null else array.get(i, element),
        element, named)))
      out
    case MapType(k, v, _) =>
      val map = value.asInstanceOf[MapData]
      val out: ObjectNode = nodes.objectNode()
      out.set[JsonNode]("keys", write(map.keyArray(), ArrayType(k), named))
      out.set[JsonNode]("values", write(map.valueArray(), ArrayType(v), named))
      out
    case NullType => nodes.nullNode()
    case other => nodes.textNode(String.valueOf(value)) // shown, not round-tripped: no Python type for it
  }

  private def floatingNode(d: Double): JsonNode =
    if (d.isNaN) nodes.textNode("NaN")
    else if (d.isInfinite) nodes.textNode(if (d > 0) "Infinity" else "-Infinity")
    else nodes.numberNode(d)

  private def bad(what: String, why: String) = QueryErrors.badKey(what, why)
}
