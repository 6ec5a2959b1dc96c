package txstate.query

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.apache.spark.sql.types.StructType

import txstate.engine.WriteStamp
import txstate.query.follow.Follower

/**
 * Writing the query protocol's answers (docs/query-protocol.md, "Response"): store descriptions,
 * query results with their positions, and follower status. Rows go straight from the store's row
 * format to JSON ([[InternalJson]]).
 */
private[txstate] object AnswerJson {
  private val mapper = new ObjectMapper()
  private val nodes = JsonNodeFactory.instance

  def render(node: JsonNode): String = mapper.writeValueAsString(node)

  def newObject: ObjectNode = nodes.objectNode()

  /** The store set a target names; `target`'s `runId` and `follower` are echoed. */
  def description(d: StoreDescription, target: JsonNode): ObjectNode = {
    val codec = d.schema.codec
    val out = nodes.objectNode()
    out.put("checkpoint", d.checkpoint)
    out.put("operatorId", d.operatorId)
    d.operatorName.fold(out.putNull("operatorName"))(out.put("operatorName", _))
    out.put("storeName", d.storeName)
    out.put("numPartitions", d.numPartitions)
    out.set[JsonNode]("keySchema", mapper.readTree(d.schema.keySchema.json))
    out.set[JsonNode]("valueSchema", mapper.readTree(d.schema.valueSchema.json))
    out.put("prefixKeyColumns", codec.prefixKeyColumns)
    val ordinals = out.putArray("rangeKeyOrdinals")
    codec.rangeKeyOrdinals.foreach(ordinals.add(_))
    RequestJson.optional(target, "runId").fold(out.putNull("runId"))(r => out.put("runId", r.asText))
    RequestJson.optional(target, "follower").foreach(f => out.put("follower", f.asText))
    out
  }

  /** The description of the store set `follower` replicates. */
  def description(follower: Follower): ObjectNode = {
    val target = nodes.objectNode()
    target.put("follower", follower.id)
    description(follower.description, target)
  }

  /** A query with no commit yet: nothing to describe but its partition count (see [[BeforeFirstCommit]]). */
  def pending(checkpoint: String, numPartitions: Int): ObjectNode = {
    val out = nodes.objectNode()
    out.put("pending", true)
    out.put("checkpoint", checkpoint)
    out.put("numPartitions", numPartitions)
    out.put("message", BeforeFirstCommit.message(checkpoint))
    out
  }

  /** `{"follower", "lag": {...}, "partitions", ...}`: what a follower has applied and how it fares. */
  def followerStatus(f: Follower): ObjectNode = {
    val status = f.status
    val out = nodes.objectNode()
    out.put("follower", f.id)
    val lag = out.putObject("lag")
    status.lag.appliedBatch.fold(lag.putNull("appliedBatch"))(lag.put("appliedBatch", _))
    status.lag.leaderBatch.fold(lag.putNull("leaderBatch"))(lag.put("leaderBatch", _))
    lag.put("batches", status.lag.batches)
    lag.put("millis", status.lag.millis)
    val partitions = out.putArray("partitions")
    f.partitions.foreach(partitions.add(_))
    out.put("polls", status.polls)
    out.put("catchUps", status.catchUps)
    out.put("reanchors", status.reanchors)
    out.put("failures", status.failures)
    status.lastError.fold(out.putNull("lastError"))(out.put("lastError", _))
    out.put("closed", status.closed)
    out.put("nativeMemoryBytes", status.nativeMemoryBytes)
    out
  }

  /**
   * The response; `timestamped`: each row with when it was last written, a looked-up value as an
   * object; `namedRows`: keys and values as objects by column name, not arrays in schema order.
   */
  def result(result: StateQueryResult, query: StateQuery, keySchema: StructType, valueSchema: StructType,
      timestamped: Boolean, namedRows: Boolean = false): ObjectNode = {
    def value(r: Option[StoredRow]): JsonNode = r.fold[JsonNode](nodes.nullNode()) { row =>
      val written = InternalJson.writeRow(row.value, valueSchema, namedRows)
      if (!timestamped) written
      else {
        val stamped = nodes.objectNode()
        stamped.set[JsonNode]("value", written)
        stamp(stamped, row.written)
      }
    }
    val out = nodes.objectNode()
    val partitions = out.putArray("partitions")
    result.partitionResults.toSeq.sortBy(_._1).foreach { case (p, r) =>
      val item = partitions.addObject()
      item.put("partition", p)
      item.put("success", r.outcome.isRight)
      r.outcome match {
        case Left(f) =>
          item.put("failureReason", f.reason.name)
          item.put("failureMessage", f.message)
        case Right(RawAnswer.Values(vs, true)) => item.set[JsonNode]("result", value(vs.head))
        case Right(RawAnswer.Values(vs, false)) =>
          val array = item.putArray("result")
          vs.foreach(v => array.add(value(v)))
        case Right(RawAnswer.Page(rows, next)) =>
          val page = item.putObject("result")
          val array = page.putArray("rows")
          rows.foreach { r =>
            val row = array.addObject()
            row.set[JsonNode]("key", InternalJson.writeRow(r.key, keySchema, namedRows))
            row.set[JsonNode]("value", InternalJson.writeRow(r.value, valueSchema, namedRows))
            if (timestamped) stamp(row, r.written)
          }
          // This partition's own continuation: its next page alone.
          next.map(key => ContinuationToken(query.typeName, Map(p -> key)).encode)
            .fold(page.putNull("continuation"))(page.put("continuation", _))
      }
      item.set[JsonNode]("position", r.position.fold[JsonNode](nodes.nullNode())(position))
      val info = item.putArray("executionInfo")
      r.executionInfo.foreach(info.add)
    }
    val merged = result.position.oldest.fold(nodes.objectNode()) { o =>
      val node = position(o)
      node.putNull("checkpointId")
      node
    }
    if (result.position.oldest.isEmpty) Seq("version", "batchId", "checkpointId", "commitTimeMs", "sourceOffsets").foreach(merged.putNull)
    val byPartition = merged.putObject("partitions")
    result.position.partitions.toSeq.sortBy(_._1).foreach { case (p, pos) => byPartition.set[JsonNode](p.toString, position(pos)) }
    out.set[JsonNode]("position", merged)
    result.continuation.fold(out.putNull("continuation"))(out.put("continuation", _))
    out
  }

  /** `lastWrittenBatch` and `lastWrittenMs` of a row: numbers, or null when its last write is not known. */
  private def stamp(row: ObjectNode, written: WriteStamp): ObjectNode = {
    written.knownBatch.fold(row.putNull("lastWrittenBatch"))(row.put("lastWrittenBatch", _))
    written.knownTimeMs.fold(row.putNull("lastWrittenMs"))(row.put("lastWrittenMs", _))
    row
  }

  private def position(p: Position): ObjectNode = {
    val node = nodes.objectNode()
    node.put("version", p.version)
    node.put("batchId", p.batchId)
    p.checkpointId.fold(node.putNull("checkpointId"))(node.put("checkpointId", _))
    node.put("commitTimeMs", p.commitTimeMs)
    val offsets = node.putArray("sourceOffsets")
    p.sourceOffsets.foreach(offsets.add)
    node
  }
}
