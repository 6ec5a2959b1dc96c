package txstate.query

import java.util.UUID

import scala.util.Try

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.spark.StoreSchema

/**
 * Reading the query protocol's requests (docs/query-protocol.md, "Request"): JSON into typed
 * requests, queries, position bounds and partition lists; keys are arrays in schema order or objects
 * by column name ([[InternalJson]]). Every malformed field fails with `TXSTATE_QUERY_BAD_REQUEST`
 * naming the field and what it must be.
 */
private[txstate] object RequestJson {
  private val mapper = new ObjectMapper()

  def parse(json: String): JsonNode =
    try mapper.readTree(json)
    catch { case e: Exception => throw badRequest(s"not valid JSON: ${e.getMessage}") }

  /** A request naming `"follower"` is answered by that follower's replicas, not by the query's stores. */
  def namesFollower(json: JsonNode): Boolean = optional(json, "follower").isDefined

  def text(node: JsonNode, field: String): String =
    Option(node.get(field)).filter(_.isValueNode).map(_.asText).getOrElse(throw badRequest(s"'$field' is missing"))

  /** A field that may be absent or null. */
  def optional(node: JsonNode, field: String): Option[JsonNode] = Option(node.get(field)).filterNot(_.isNull)

  def runIdOf(node: JsonNode): Option[UUID] = optional(node, "runId").map { r =>
    Try(UUID.fromString(r.asText)).getOrElse(throw badRequest(s"'runId' must be a query run id (a UUID), got $r"))
  }

  /** `"partitions"`: null (all of them) or an array of partition numbers. */
  def partitionsOf(json: JsonNode): Option[Seq[Int]] =
    optional(json, "partitions").map { ps =>
      if (!ps.isArray || !ps.elements().asScala.forall(p => p.isIntegralNumber && p.canConvertToInt)) {
        throw badRequest("'partitions' must be an array of partition numbers")
      }
      ps.elements().asScala.map(_.asInt).toList
    }

  /** The whole request on `store`, whose keys and values have `schema`. */
  def request(json: JsonNode, store: StoreReference, schema: StoreSchema): StateQueryRequest = {
    if (!json.isObject) throw badRequest("the request must be a JSON object")
    StateQueryRequest(
      store,
      query = query(json.get("query"), schema.keySchema),
      partitions = partitionsOf(json),
      bound = bound(json.get("bound")),
      activeOnly = flag(json, "requireActive"),
      executionInfo = flag(json, "executionInfo"),
      checkpointReads = flag(json, "checkpointReads"),
      timestamped = flag(json, "timestamped"))
  }

  private def query(node: JsonNode, keySchema: StructType): StateQuery = {
    if (node == null || !node.isObject) throw badRequest("'query' must be an object")
    def row(n: JsonNode, schema: StructType, what: String): UnsafeRow =
      QueryResolver.toUnsafe(InternalJson.readRow(n, schema, what), schema, what)
    def optRow(field: String): Option[UnsafeRow] = optional(node, field).map(row(_, keySchema, field))
    def limit = optional(node, "limit").map { n =>
      if (n.isIntegralNumber && n.canConvertToInt) n.asInt
      else throw badRequest(s"'query.limit' must be a whole number of rows per partition (1 to ${PagedQuery.maxLimit}), got $n")
    }.getOrElse(PagedQuery.defaultLimit)
    def continuation = optional(node, "continuation").map(_.asText)
    val changedSince = optional(node, "changedSince").map(readChangedSince)
    text(node, "type") match {
      case lookup @ ("key" | "multiKey") if changedSince.isDefined =>
        throw badRequest(s"'changedSince' filters range, prefix and scan queries, not a $lookup query; " +
          "ask for it with 'timestamped' and compare 'lastWrittenBatch' or 'lastWrittenMs'")
      case "key" => KeyQuery(row(node.get("key"), keySchema, "key"))
      case "multiKey" =>
        val keys = Option(node.get("keys")).filter(_.isArray).getOrElse(throw badRequest("'keys' must be an array"))
        MultiKeyQuery(keys.elements().asScala.zipWithIndex.map { case (k, i) => row(k, keySchema, s"keys[$i]") }.toList)
      case "range" => RangeQuery(optRow("lower"), optRow("upper"), flag(node, "descending"), limit, continuation, changedSince)
      case "prefix" =>
        val prefix = Option(node.get("prefix")).filter(p => p.isArray || p.isObject)
          .getOrElse(throw badRequest("'prefix' must be an array"))
        val columns = prefix.size
        if (columns < 1 || columns > keySchema.length) throw QueryErrors.badPrefix(columns, keySchema.simpleString, keySchema.length)
        val leading = StructType(keySchema.fields.take(columns))
        if (prefix.isObject && prefix.fieldNames().asScala.toSet != leading.fieldNames.toSet) {
          throw QueryErrors.badNamedPrefix(prefix.fieldNames().asScala.toList, keySchema.fieldNames.toList)
        }
        PrefixQuery(row(prefix, leading, "prefix"), columns, limit, continuation, changedSince)
      case "scan" => ScanQuery(limit, continuation, changedSince)
      case other => UnknownQuery(other)
    }
  }

  /** `{"batch": N}` or `{"ms": T}` (docs/query-protocol.md, "Request"). */
  private def readChangedSince(node: JsonNode): ChangedSince =
    (if (node.isObject) node.fieldNames().asScala.toList else Nil) match {
      case Seq("batch") => ChangedSince.Batch(wholeNumber(node.get("batch"), "changedSince.batch", "a batch id (0 or more)", min = 0))
      case Seq("ms") => ChangedSince.TimeMs(wholeNumber(node.get("ms"), "changedSince.ms",
        "a batch time in milliseconds since the epoch (0 or more)", min = 0))
      case _ => throw badRequest(s"""'changedSince' must be {"batch": N} (rows last written by batch N or later) or """ +
        s"""{"ms": T} (by a batch whose time is T or later), got $node""")
    }

  /** The position a reader must have reached (docs/query-protocol.md, "Bounds"). */
  private def bound(node: JsonNode): PositionBound =
    if (node == null || node.isNull) PositionBound.Unbounded
    else text(node, "type") match {
      case "unbounded" => PositionBound.Unbounded
      case "atLeastBatch" => PositionBound.AtLeastBatch(batchNumber(node.get("batchId"), "bound.batchId"))
      case "atLeast" =>
        val partitions = optional(node, "partitions").map(_.properties().asScala.map { e =>
          Try(e.getKey.toInt).toOption.getOrElse(throw badRequest(s"bound.partitions has '${e.getKey}', not a partition number")) ->
            Position(batchNumber(e.getValue, s"bound.partitions.${e.getKey}") + 1, None, 0L, Nil)
        }.toMap).getOrElse(Map.empty)
        val oldest = optional(node, "batchId").map(b => -1 -> Position(batchNumber(b, "bound.batchId") + 1, None, 0L, Nil))
        PositionBound.AtLeast(MergedPosition(if (partitions.nonEmpty) partitions else oldest.toMap))
      case other => throw badRequest(s"unknown position bound type '$other'")
    }

  private def batchNumber(node: JsonNode, field: String): Long = wholeNumber(node, field, "a batch number")

  private def wholeNumber(node: JsonNode, field: String, expected: String, min: Long = Long.MinValue): Long =
    Option(node).filter(n => n.isIntegralNumber && n.canConvertToLong && n.asLong >= min).map(_.asLong)
      .getOrElse(throw badRequest(s"'$field' must be $expected, got ${Option(node).fold("nothing")(_.toString)}"))

  private def flag(node: JsonNode, field: String): Boolean = Option(node.get(field)).exists(_.asBoolean)

  /** `"namedRows": true`: the answer's rows are objects by column name, not arrays in schema order. */
  def namedRows(json: JsonNode): Boolean = flag(json, "namedRows")

  def badRequest(why: String): IllegalArgumentException = QueryErrors.badRequest(why)
}
