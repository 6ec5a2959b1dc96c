package txstate.serve

import com.fasterxml.jackson.databind.node.ObjectNode

import txstate.query.AnswerJson
import txstate.query.follow.{Follower, FollowerStatus}

/** `GET /health`: the follower's status JSON plus `"status"` and, when unhealthy, `"reason"`. */
object ServeHealth {
  /** Healthy: open, holding a committed batch of every followed partition, and the last poll succeeded. */
  def healthy(s: FollowerStatus): Boolean = !s.closed && s.lag.appliedBatch.isDefined && s.lastError.isEmpty

  def reason(s: FollowerStatus): Option[String] =
    if (s.closed) Some("the follower is closed (the server is shutting down)")
    else if (s.lastError.nonEmpty) Some(s"the last poll of the leader's commit log failed: ${s.lastError.get}")
    else if (s.lag.appliedBatch.isEmpty) Some("the follower holds no committed batch yet (the leader has committed none)")
    else None

  /** (HTTP status, body): 200 when healthy, else 503 with the reason. */
  def answer(follower: Follower): (Int, ObjectNode) = {
    val json = AnswerJson.followerStatus(follower)
    val status = follower.status
    reason(status) match {
      case None =>
        json.put("status", "ok")
        (200, json)
      case Some(why) =>
        json.put("status", "unavailable")
        json.put("reason", why)
        (503, json)
    }
  }
}
