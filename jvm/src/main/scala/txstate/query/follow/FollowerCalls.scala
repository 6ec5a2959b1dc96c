package txstate.query.follow

import com.fasterxml.jackson.databind.JsonNode
import org.apache.hadoop.conf.Configuration

import txstate.query.{AnswerJson, RequestJson, StoreReference}

/**
 * The query protocol's calls answered by one follower's replicas in this JVM, with no Spark
 * session: what the serving process answers over HTTP, and what [[txstate.query.ProtocolCalls]]
 * does with a request naming `"follower"`.
 */
object FollowerCalls {
  /** The description of the store set `follower` replicates; `target`'s `runId` is echoed. */
  def describe(follower: Follower, target: JsonNode): String =
    AnswerJson.render(AnswerJson.description(follower.description, target))

  def describe(follower: Follower): String = AnswerJson.render(AnswerJson.description(follower))

  /** Answers `requestJson` (a query on the follower's store set) from its replicas. */
  def execute(follower: Follower, requestJson: String, hadoopConf: => Configuration): String =
    execute(follower, RequestJson.parse(requestJson), hadoopConf)

  /** The same for a request already parsed (one that named `"follower"` in a session's call). */
  def execute(follower: Follower, json: JsonNode, hadoopConf: => Configuration): String = {
    val d = follower.description
    val request = RequestJson.request(json, StoreReference(d.checkpoint, None, d.operatorId.toString, d.storeName), d.schema)
    AnswerJson.render(AnswerJson.result(FollowerQueries.execute(follower, request, hadoopConf), request.query,
      d.schema.keySchema, d.schema.valueSchema, request.timestamped, RequestJson.namedRows(json)))
  }
}
