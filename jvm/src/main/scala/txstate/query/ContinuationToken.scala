package txstate.query

import java.nio.charset.StandardCharsets.UTF_8
import java.util.Base64

import scala.util.Try

import org.json4s.{JObject, JString}
import org.json4s.jackson.JsonMethods

/**
 * Where each partition's next page starts: the encoded key its last page ended with. A partition
 * the token does not name has no more rows. Opaque to users (base64url of a small JSON object);
 * it names its query type so a token is never applied to another kind of query.
 */
private[query] final case class ContinuationToken(queryType: String, after: Map[Int, Array[Byte]]) {
  def encode: String = {
    val json = JObject(
      "type" -> JString(queryType),
      "after" -> JObject(after.toSeq.sortBy(_._1).map { case (p, k) => p.toString -> JString(Base64.getEncoder.encodeToString(k)) }.toList))
    Base64.getUrlEncoder.withoutPadding.encodeToString(JsonMethods.compact(json).getBytes(UTF_8))
  }

  /** The cursor of `partition` for a page of `limit` rows. */
  def cursor(partition: Int, limit: Int): PageCursor = after.get(partition) match {
    case Some(key) => PageCursor(limit, Some(key), finished = false)
    case None => PageCursor(limit, None, finished = true)
  }
}

private[query] object ContinuationToken {
  def decode(token: String, queryType: String): ContinuationToken = {
    def bad(why: String) = QueryErrors.badContinuation(queryType, why)
    val json =
      try JsonMethods.parse(new String(Base64.getUrlDecoder.decode(token.trim), UTF_8))
      catch { case e: Exception => throw bad(e.getMessage) }
    (json \ "type", json \ "after") match {
      case (JString(`queryType`), JObject(fields)) =>
        ContinuationToken(queryType, fields.map {
          case (p, JString(k)) => Try(p.toInt).toOption.getOrElse(throw bad(s"partition '$p'")) -> Base64.getDecoder.decode(k)
          case (p, _) => throw bad(s"partition '$p'")
        }.toMap)
      case (JString(other), _) => throw bad(s"it continues a $other query")
      case _ => throw bad("it is malformed")
    }
  }
}
