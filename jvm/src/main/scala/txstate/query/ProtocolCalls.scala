package txstate.query

import com.fasterxml.jackson.databind.JsonNode
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.StateStoreConf
import org.apache.spark.sql.streaming.StreamingQuery
import org.apache.spark.sql.types.StructType

import txstate.compat.StreamingQueryWrapper
import txstate.query.RequestJson.{badRequest, optional, parse, runIdOf, text}
import txstate.query.follow.{FollowOptions, FollowerCalls, Followers}
import txstate.spark.{StoreSchema, TxStateConf}

/**
 * The query protocol's seven calls in a Spark session (docs/query-protocol.md): each takes and
 * returns JSON, one round trip per call whatever the answer's size. `txstate_spark.query` makes
 * them by py4j; under Spark Connect the `txstate` data source's protocol table makes them on the
 * driver (`source/ProtocolTable`). A request naming a follower is answered by [[FollowerCalls]].
 */
object ProtocolCalls {
  /** `{"checkpoint", "runId", "isActive"}` of a streaming query started in this JVM. */
  def queryTarget(query: StreamingQuery): String = query match {
    case wrapper: StreamingQueryWrapper =>
      val out = AnswerJson.newObject
      out.put("checkpoint", wrapper.streamingQuery.resolvedCheckpointRoot)
      out.put("runId", wrapper.runId.toString)
      out.put("isActive", wrapper.isActive)
      AnswerJson.render(out)
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
    if (RequestJson.namesFollower(target)) FollowerCalls.describe(Followers.get(text(target, "follower")), target)
    else AnswerJson.render(orPending(spark, target)(StoreLocator.describe(text(target, "checkpoint"),
      text(target, "operator"), text(target, "store"), spark.sessionState.newHadoopConf())) match {
      case Left(n) => AnswerJson.pending(text(target, "checkpoint"), n)
      case Right(d) => AnswerJson.description(d, target)
    })
  }

  def execute(spark: SparkSession, requestJson: String): String = {
    val json = parse(requestJson)
    if (RequestJson.namesFollower(json)) {
      FollowerCalls.execute(Followers.get(text(json, "follower")), json, spark.sessionState.newHadoopConf())
    } else executeOnQuery(spark, json)
  }

  private def executeOnQuery(spark: SparkSession, json: JsonNode): String = {
    val store = StoreReference(text(json, "checkpoint"), runIdOf(json), text(json, "operator"), text(json, "store"))
    orPending(spark, json)(StoreLocator.describe(store.checkpoint, store.operator, store.storeName,
      spark.sessionState.newHadoopConf()).schema) match { // by name: read only when not cached
      case Left(n) =>
        val empty = new StructType()
        AnswerJson.render(AnswerJson.result(BeforeFirstCommit.result(n, store.checkpoint), UnknownQuery("none"),
          empty, empty, timestamped = false))
      case Right(schema) => executeOn(spark, json, store, schema)
    }
  }

  private def executeOn(spark: SparkSession, json: JsonNode, store: StoreReference, schema: StoreSchema): String = {
    val request = RequestJson.request(json, store, schema)
    AnswerJson.render(AnswerJson.result(StateQueryExecutor.execute(spark, request), request.query, schema.keySchema,
      schema.valueSchema, request.timestamped, RequestJson.namedRows(json)))
  }

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
      partitions = RequestJson.partitionsOf(json),
      pollIntervalMs = optional(json, "pollIntervalMs").fold(defaults.pollIntervalMs)(_.asLong),
      replayLimit = optional(json, "replayLimit").fold(defaults.replayLimit)(_.asInt),
      localDir = optional(json, "localDir").fold(defaults.localDir)(_.asText),
      engine = TxStateConf.from(new StateStoreConf(spark.sessionState.conf)).store.engine)
    val started =
      try Followers.follow(text(json, "checkpoint"), text(json, "operator"), text(json, "store"),
        spark.sessionState.newHadoopConf(), options, optional(json, "requestId").map(_.asText))
      catch { case e: IllegalArgumentException if !e.getMessage.startsWith("[TXSTATE_") => throw badRequest(e.getMessage) }
    AnswerJson.render(AnswerJson.description(started))
  }

  /** `{"lag": {...}, ...}` of follower `{"follower"}`. */
  def followerStatus(requestJson: String): String =
    AnswerJson.render(AnswerJson.followerStatus(Followers.get(text(parse(requestJson), "follower"))))

  /** Closes follower `{"follower"}`: `{"closed": true}`, or false when it was closed already. */
  def unfollow(requestJson: String): String = {
    val out = AnswerJson.newObject
    out.put("closed", Followers.close(text(parse(requestJson), "follower")))
    AnswerJson.render(out)
  }

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
}
