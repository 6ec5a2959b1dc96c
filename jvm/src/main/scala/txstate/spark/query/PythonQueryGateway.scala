package txstate.spark.query

import java.util.UUID

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.streaming.StreamingQuery
import org.apache.spark.sql.types.StructType

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.StateStoreConf

import txstate.compat.StreamingQueryWrapper
import txstate.engine.WriteStamp
import txstate.spark.{StoreSchema, TxStateConf}
import txstate.spark.query.follow.{FollowOptions, Follower, FollowerQueries, Followers}

/**
 * The JVM end of `txstate_spark.query`: three calls that take and return JSON (one py4j round trip
 * per query, whatever the answer's size). The protocol is docs/query-protocol.md. Keys go from
 * JSON straight into the store's row format and answers straight from it back to JSON.
 */
object PythonQueryGateway {
  private val mapper = new ObjectMapper()
  private val nodes = JsonNodeFactory.instance

  /** `{"checkpoint", "runId", "isActive"}` of a streaming query started in this JVM. */
  def queryTarget(query: StreamingQuery): String = query match {
    case wrapper: StreamingQueryWrapper =>
      val out = nodes.objectNode()
      out.put("checkpoint", wrapper.streamingQuery.resolvedCheckpointRoot)
      out.put("runId", wrapper.runId.toString)
      out.put("isActive", wrapper.isActive)
      mapper.writeValueAsString(out)
    case other => throw QueryErrors.unsupportedTarget(other.getClass.getName)
  }

  /**
   * [[queryTarget]] of the query run `{"runId"}` of this session, for clients that hold no JVM
   * StreamingQuery (Spark Connect).
   */
  def queryTargetOfRun(spark: SparkSession, requestJson: String): String = {
    val runId = text(parse(requestJson), "runId")
    spark.streams.active.find(_.runId.toString == runId).fold(throw QueryErrors.unsupportedTarget(
      s"query run $runId, which is not running in this Spark session"))(queryTarget)
  }

  /** The store set a target names: partitions, schemas and key encoding. */
  def describe(spark: SparkSession, targetJson: String): String = {
    val target = parse(targetJson)
    if (hasFollower(target)) describeStore(follower(target).description, target)
    else orPending(spark, target)(StoreLocator.describe(text(target, "checkpoint"), text(target, "operator"),
      text(target, "store"), spark.sessionState.newHadoopConf())) match {
      case Left(n) =>
        val out = nodes.objectNode()
        out.put("pending", true)
        out.put("checkpoint", text(target, "checkpoint"))
        out.put("numPartitions", n)
        out.put("message", BeforeFirstCommit.message(text(target, "checkpoint")))
        mapper.writeValueAsString(out)
      case Right(d) => describeStore(d, target)
    }
  }

  private def describeStore(d: StoreDescription, target: JsonNode): String = {
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
    Option(target.get("runId")).filterNot(_.isNull).fold(out.putNull("runId"))(r => out.put("runId", r.asText))
    Option(target.get("follower")).filterNot(_.isNull).foreach(f => out.put("follower", f.asText))
    mapper.writeValueAsString(out)
  }

  /** The description of the store set `follower` replicates. */
  def describe(follower: Follower): String = {
    val target = nodes.objectNode()
    target.put("follower", follower.id)
    describeStore(follower.description, target)
  }

  def execute(spark: SparkSession, requestJson: String): String = {
    val json = parse(requestJson)
    if (hasFollower(json)) executeOn(follower(json), requestJson, spark.sessionState.newHadoopConf())
    else executeOnQuery(spark, json)
  }

  private def executeOnQuery(spark: SparkSession, json: JsonNode): String = {
    val store = StoreReference(text(json, "checkpoint"),
      runIdOf(json), text(json, "operator"), text(json, "store"))
    orPending(spark, json)(StoreLocator.describe(store.checkpoint, store.operator, store.storeName,
      spark.sessionState.newHadoopConf()).schema) match { // by name: read only when not cached
      case Left(n) =>
        val empty = new StructType()
        mapper.writeValueAsString(writeResult(BeforeFirstCommit.result(n, store.checkpoint), UnknownQuery("none"),
          empty, empty, timestamped = false))
      case Right(schema) => executeOn(spark, json, store, schema)
    }
  }

  private def executeOn(spark: SparkSession, json: JsonNode, store: StoreReference, schema: StoreSchema): String = {
    val request = readRequest(json, store, schema)
    mapper.writeValueAsString(writeResult(StateQueryExecutor.execute(spark, request), request.query, schema.keySchema,
      schema.valueSchema, request.timestamped))
  }

  /**
   * A request answered by `follower`'s replicas in this JVM: what `execute` does for requests naming
   * `"follower"`, and what the serving process answers over HTTP (no Spark session needed).
   */
  def executeOn(follower: Follower, requestJson: String, hadoopConf: => Configuration): String = {
    val json = parse(requestJson)
    val d = follower.description
    val request = readRequest(json, StoreReference(d.checkpoint, None, d.operatorId.toString, d.storeName), d.schema)
    mapper.writeValueAsString(writeResult(FollowerQueries.execute(follower, request, hadoopConf), request.query,
      d.schema.keySchema, d.schema.valueSchema, request.timestamped))
  }

  private def readRequest(json: JsonNode, store: StoreReference, schema: StoreSchema): StateQueryRequest = {
    if (!json.isObject) throw badRequest("the request must be a JSON object")
    StateQueryRequest(
      store,
      query = readQuery(json.get("query"), schema.keySchema),
      partitions = partitionsOf(json),
      bound = readBound(json.get("bound")),
      activeOnly = flag(json, "requireActive"),
      executionInfo = flag(json, "executionInfo"),
      checkpointReads = flag(json, "checkpointReads"),
      timestamped = flag(json, "timestamped"))
  }

  // ---- followers ----------------------------------------------------------------------------

  /**
   * Starts a follower (`{"checkpoint", "operator", "store", "partitions"?, "pollIntervalMs"?,
   * "replayLimit"?, "localDir"?, "requestId"?}`; a second request with the same `requestId` gets
   * the same follower) with the session's RocksDB settings; answers its description
   * with `"follower"`, its id.
   */
  def follow(spark: SparkSession, requestJson: String): String = {
    val json = parse(requestJson)
    val defaults = FollowOptions()
    val options = FollowOptions(
      partitions = partitionsOf(json),
      pollIntervalMs = Option(json.get("pollIntervalMs")).filterNot(_.isNull).fold(defaults.pollIntervalMs)(_.asLong),
      replayLimit = Option(json.get("replayLimit")).filterNot(_.isNull).fold(defaults.replayLimit)(_.asInt),
      localDir = Option(json.get("localDir")).filterNot(_.isNull).fold(defaults.localDir)(_.asText),
      engine = TxStateConf.from(new StateStoreConf(spark.sessionState.conf)).store.engine)
    val started =
      try Followers.follow(text(json, "checkpoint"), text(json, "operator"), text(json, "store"),
        spark.sessionState.newHadoopConf(), options, Option(json.get("requestId")).filterNot(_.isNull).map(_.asText))
      catch { case e: IllegalArgumentException if !e.getMessage.startsWith("[TXSTATE_") => throw badRequest(e.getMessage) }
    val target = nodes.objectNode()
    target.put("follower", started.id)
    describeStore(started.description, target)
  }

  /** `{"lag": {...}, ...}` of follower `{"follower"}`. */
  def followerStatus(requestJson: String): String =
    mapper.writeValueAsString(statusJson(follower(parse(requestJson))))

  def statusJson(f: Follower): ObjectNode = {
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

  /** Closes follower `{"follower"}`: `{"closed": true}`, or false when it was closed already. */
  def unfollow(requestJson: String): String = {
    val out = nodes.objectNode()
    out.put("closed", Followers.close(text(parse(requestJson), "follower")))
    mapper.writeValueAsString(out)
  }

  private def hasFollower(json: JsonNode): Boolean = Option(json.get("follower")).exists(!_.isNull)

  private def follower(json: JsonNode): Follower = Followers.get(text(json, "follower"))

  /**
   * `describe`'s answer, or the partition count of the target's running query when that has no
   * commit yet and so nothing to describe (see [[BeforeFirstCommit]]).
   */
  private def orPending[T](spark: SparkSession, target: JsonNode)(describe: => T): Either[Int, T] =
    try Right(describe)
    catch {
      case e: IllegalArgumentException =>
        BeforeFirstCommit.partitions(spark, text(target, "checkpoint"), runIdOf(target),
          spark.sessionState.newHadoopConf()).map(Left(_)).getOrElse(throw e)
    }

  // ---- requests -----------------------------------------------------------------------------

  private def readQuery(node: JsonNode, keySchema: StructType): StateQuery = {
    if (node == null || !node.isObject) throw badRequest("'query' must be an object")
    def row(n: JsonNode, schema: StructType, what: String): UnsafeRow =
      QueryResolver.toUnsafe(InternalJson.readRow(n, schema, what), schema, what)
    def optRow(field: String): Option[UnsafeRow] = Option(node.get(field)).filterNot(_.isNull).map(row(_, keySchema, field))
    def limit = Option(node.get("limit")).filterNot(_.isNull).map(_.asInt).getOrElse(PagedQuery.defaultLimit)
    def continuation = Option(node.get("continuation")).filterNot(_.isNull).map(_.asText)
    val changedSince = Option(node.get("changedSince")).filterNot(_.isNull).map(readChangedSince)
    text(node, "type") match {
      case lookup @ ("key" | "multiKey") if changedSince.isDefined =>
        throw badRequest(s"'changedSince' filters range, prefix and scan queries, not a $lookup query; " +
          "ask for it with 'timestamped' and compare 'lastWrittenBatch' or 'lastWrittenMs'")
      case "key" => KeyQuery(row(node.get("key"), keySchema, "key"))
      case "multiKey" =>
        val keys = Option(node.get("keys")).filter(_.isArray).getOrElse(throw badRequest("'keys' must be an array"))
        MultiKeyQuery(keys.elements().asScala.zipWithIndex.map { case (k, i) => row(k, keySchema, s"keys[$i]") }.toSeq)
      case "range" => RangeQuery(optRow("lower"), optRow("upper"), flag(node, "descending"), limit, continuation, changedSince)
      case "prefix" =>
        val prefix = Option(node.get("prefix")).filter(_.isArray).getOrElse(throw badRequest("'prefix' must be an array"))
        val columns = prefix.size
        if (columns < 1 || columns > keySchema.length) throw QueryErrors.badPrefix(columns, keySchema.simpleString, keySchema.length)
        PrefixQuery(row(prefix, StructType(keySchema.fields.take(columns)), "prefix"), columns, limit, continuation,
          changedSince)
      case "scan" => ScanQuery(limit, continuation, changedSince)
      case other => UnknownQuery(other)
    }
  }

  /** `{"batch": N}` or `{"ms": T}` (docs/query-protocol.md, "Request"). */
  private def readChangedSince(node: JsonNode): ChangedSince =
    (if (node.isObject) node.fieldNames().asScala.toSeq else Nil) match {
      case Seq("batch") => ChangedSince.Batch(wholeNumber(node.get("batch"), "changedSince.batch", "a batch id (0 or more)", min = 0))
      case Seq("ms") => ChangedSince.TimeMs(wholeNumber(node.get("ms"), "changedSince.ms",
        "a batch time in milliseconds since the epoch (0 or more)", min = 0))
      case _ => throw badRequest(s"'changedSince' must be {\"batch\": N} (rows last written by batch N or later) or " +
        s"{\"ms\": T} (by a batch whose time is T or later), got $node")
    }

  private def readBound(node: JsonNode): PositionBound =
    if (node == null || node.isNull) PositionBound.Unbounded
    else text(node, "type") match {
      case "unbounded" => PositionBound.Unbounded
      case "atLeastBatch" => PositionBound.AtLeastBatch(batchNumber(node.get("batchId"), "bound.batchId"))
      case "atLeast" =>
        val partitions = Option(node.get("partitions")).filterNot(_.isNull).map(_.properties().asScala.map { e =>
          e.getKey.toIntOption.getOrElse(throw badRequest(s"bound.partitions has '${e.getKey}', not a partition number")) ->
            Position(batchNumber(e.getValue, s"bound.partitions.${e.getKey}") + 1, None, 0L, Nil)
        }.toMap).getOrElse(Map.empty)
        val oldest = Option(node.get("batchId")).filterNot(_.isNull).map(b => -1 -> Position(batchNumber(b, "bound.batchId") + 1, None, 0L, Nil))
        PositionBound.AtLeast(MergedPosition(if (partitions.nonEmpty) partitions else oldest.toMap))
      case other => throw badRequest(s"unknown position bound type '$other'")
    }

  // ---- answers ------------------------------------------------------------------------------

  /** The response; `timestamped`: each row with when it was last written, a looked-up value as an object. */
  private def writeResult(result: StateQueryResult, query: StateQuery, keySchema: StructType, valueSchema: StructType,
      timestamped: Boolean): ObjectNode = {
    def value(r: Option[StoredRow]): JsonNode = r.fold[JsonNode](nodes.nullNode()) { row =>
      val written = InternalJson.writeRow(row.value, valueSchema)
      if (!timestamped) written
      else {
        val stamped = nodes.objectNode()
        stamped.set[JsonNode]("value", written)
        writeStamp(stamped, row.written)
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
            row.set[JsonNode]("key", InternalJson.writeRow(r.key, keySchema))
            row.set[JsonNode]("value", InternalJson.writeRow(r.value, valueSchema))
            if (timestamped) writeStamp(row, r.written)
          }
          // This partition's own continuation: its next page alone.
          next.map(key => ContinuationToken(query.typeName, Map(p -> key)).encode)
            .fold(page.putNull("continuation"))(page.put("continuation", _))
      }
      item.set[JsonNode]("position", r.position.fold[JsonNode](nodes.nullNode())(writePosition))
      val info = item.putArray("executionInfo")
      r.executionInfo.foreach(info.add)
    }
    val merged = result.position.oldest.fold(nodes.objectNode()) { o =>
      val node = writePosition(o)
      node.putNull("checkpointId")
      node
    }
    if (result.position.oldest.isEmpty) Seq("version", "batchId", "checkpointId", "commitTimeMs", "sourceOffsets").foreach(merged.putNull)
    val byPartition = merged.putObject("partitions")
    result.position.partitions.toSeq.sortBy(_._1).foreach { case (p, pos) => byPartition.set[JsonNode](p.toString, writePosition(pos)) }
    out.set[JsonNode]("position", merged)
    result.continuation.fold(out.putNull("continuation"))(out.put("continuation", _))
    out
  }

  /** `lastWrittenBatch` and `lastWrittenMs` of a row: numbers, or null when its last write is not known. */
  private def writeStamp(row: ObjectNode, written: WriteStamp): ObjectNode = {
    written.knownBatch.fold(row.putNull("lastWrittenBatch"))(row.put("lastWrittenBatch", _))
    written.knownTimeMs.fold(row.putNull("lastWrittenMs"))(row.put("lastWrittenMs", _))
    row
  }

  private def writePosition(p: Position): ObjectNode = {
    val node = nodes.objectNode()
    node.put("version", p.version)
    node.put("batchId", p.batchId)
    p.checkpointId.fold(node.putNull("checkpointId"))(node.put("checkpointId", _))
    node.put("commitTimeMs", p.commitTimeMs)
    val offsets = node.putArray("sourceOffsets")
    p.sourceOffsets.foreach(offsets.add)
    node
  }

  // ---- JSON helpers -------------------------------------------------------------------------

  private def parse(json: String): JsonNode =
    try mapper.readTree(json)
    catch { case e: Exception => throw badRequest(s"not valid JSON: ${e.getMessage}") }

  private def text(node: JsonNode, field: String): String =
    Option(node.get(field)).filter(_.isValueNode).map(_.asText).getOrElse(throw badRequest(s"'$field' is missing"))

  private def runIdOf(node: JsonNode): Option[UUID] =
    Option(node.get("runId")).filterNot(_.isNull).map(r => UUID.fromString(r.asText))

  /** `"partitions"`: null (all of them) or an array of partition numbers. */
  private def partitionsOf(json: JsonNode): Option[Seq[Int]] =
    Option(json.get("partitions")).filterNot(_.isNull).map { ps =>
      if (!ps.isArray || !ps.elements().asScala.forall(_.canConvertToInt)) {
        throw badRequest("'partitions' must be an array of partition numbers")
      }
      ps.elements().asScala.map(_.asInt).toSeq
    }

  private def batchNumber(node: JsonNode, field: String): Long = wholeNumber(node, field, "a batch number")

  private def wholeNumber(node: JsonNode, field: String, expected: String, min: Long = Long.MinValue): Long =
    Option(node).filter(n => n.isIntegralNumber && n.canConvertToLong && n.asLong >= min).map(_.asLong)
      .getOrElse(throw badRequest(s"'$field' must be $expected, got ${Option(node).fold("nothing")(_.toString)}"))

  private def flag(node: JsonNode, field: String): Boolean = Option(node.get(field)).exists(_.asBoolean)

  private def badRequest(why: String) = QueryErrors.badRequest(why)
}
