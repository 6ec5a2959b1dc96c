package txstate.serve

import scala.util.Try
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.query.PagedQuery

/**
 * What the server checks in a `POST /v1/query` body before the query layer reads it: a known query
 * type, a whole-number page `limit` within --max-page (a paged query without one gets the smaller
 * of the protocol default and --max-page), and a well-formed `bound`, so that every malformed
 * request is a 400 naming the field rather than a failure deeper down. Bodies that are not a JSON
 * object with a `query` object go on unchanged, for the query layer's own message.
 */
private[serve] object RequestChecks {
  private val mapper = new ObjectMapper()
  private val pagedTypes = Set("range", "prefix", "scan")

  /** The request to run (possibly with a `limit` added), or why not; `rejectedPage` counts --max-page refusals. */
  def apply(text: String, maxPage: Int, rejectedPage: () => Unit): Either[HttpFailure, String] = {
    val parsed = try Some(mapper.readTree(text)) catch { case NonFatal(_) => None }
    parsed.collect { case o: ObjectNode => o }.flatMap(r => Option(r.get("query")).collect { case q: ObjectNode => r -> q }) match {
      case None => Right(text)
      case Some((request, query)) =>
        val queryType = Option(query.get("type")).filterNot(_.isNull)
        val limit = Option(query.get("limit")).filterNot(_.isNull)
        queryType match {
          case Some(t) if !(t.isTextual && HttpApi.queryTypes.contains(t.asText)) => Left(ServeErrors.unknownQueryType(t.asText))
          case _ if limit.exists(l => !l.canConvertToLong || !l.isIntegralNumber) =>
            Left(ServeErrors.badField("query.limit", s"must be a whole number of rows per partition, got ${limit.get}"))
          case _ if limit.exists(_.asLong > maxPage) =>
            rejectedPage()
            Left(ServeErrors.pageTooLarge(limit.get.asLong, maxPage))
          case _ =>
            boundProblem(request.get("bound")).map(ServeErrors.badField("bound", _)).toLeft {
              if (queryType.exists(t => pagedTypes.contains(t.asText)) && limit.isEmpty) {
                query.put("limit", math.min(PagedQuery.defaultLimit, maxPage))
                mapper.writeValueAsString(request)
              } else text
            }
        }
    }
  }

  /** What is wrong with a `bound` (docs/query-protocol.md, "Request"), if anything. */
  private def boundProblem(bound: JsonNode): Option[String] = {
    def batch(n: JsonNode): Boolean = n != null && n.isIntegralNumber && n.canConvertToLong && n.asLong >= -1
    if (bound == null || bound.isNull) None
    else if (!bound.isObject) Some(s"must be an object with a 'type', got $bound")
    else Option(bound.get("type")).filter(_.isTextual).map(_.asText) match {
      case Some("unbounded") => None
      case Some("atLeastBatch") =>
        if (batch(bound.get("batchId"))) None else Some("'atLeastBatch' needs 'batchId', a batch number")
      case Some("atLeast") =>
        val partitions = Option(bound.get("partitions")).filterNot(_.isNull)
        val batchId = Option(bound.get("batchId")).filterNot(_.isNull)
        if (partitions.isEmpty && batchId.isEmpty) Some("'atLeast' needs 'partitions' ({\"0\": batch, ...}) or 'batchId'")
        else if (batchId.exists(!batch(_))) Some("'batchId' must be a batch number")
        else partitions.flatMap { ps =>
          val entries = if (ps.isObject) ps.properties().asScala.toSeq else Nil
          if (!ps.isObject || entries.exists(e => Try(e.getKey.toInt).toOption.forall(_ < 0) || !batch(e.getValue))) {
            Some(s"""'partitions' must map partition numbers to batch numbers, e.g. {"0": 4}, got $ps""")
          } else None
        }
      case _ => Some("'type' must be unbounded, atLeastBatch or atLeast")
    }
  }
}
