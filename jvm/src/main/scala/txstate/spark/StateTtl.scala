package txstate.spark

import java.util.Locale

import scala.util.Try

/**
 * The state TTL settings: `ttl` for every stateful operator of the query, `ttl.operator.<id>` for
 * one (the operator id is the number under the checkpoint's `state/` folder; `off` exempts it).
 * Durations take a unit: ms, s, m (or min), h or d. Off by default.
 */
final case class StateTtl(default: Option[Long], byOperator: Map[Long, Option[Long]]) {
  /** The TTL in milliseconds of the operator's stores, if it has one. */
  def forOperator(operatorId: Long): Option[Long] = byOperator.getOrElse(operatorId, default)
}

object StateTtl {
  val off: StateTtl = StateTtl(None, Map.empty)
  val key = "ttl"
  val operatorKeyPrefix = "ttl.operator."

  def isTtlKey(key: String): Boolean = key == StateTtl.key || operatorKey(key).isDefined

  /** Reads the TTL keys of `ours` (our settings with the prefix stripped); `prefix` names them in errors. */
  def from(ours: Map[String, String], prefix: String): StateTtl = {
    val byOperator = ours.toSeq.flatMap { case (k, v) =>
      operatorKey(k).map {
        case Some(id) => id -> duration(prefix + k, v)
        case None => throw TxStateErrors.badSetting(prefix + k,
          s"must end with an operator id (the number of the operator's folder under the checkpoint's state/), e.g. " +
            s"${prefix}${operatorKeyPrefix}0")
      }
    }.toMap
    StateTtl(ours.get(key).flatMap(duration(prefix + key, _)), byOperator)
  }

  /** Some(Some(id)) for `ttl.operator.<id>`, Some(None) for a malformed id, None for other keys. */
  private def operatorKey(key: String): Option[Option[Long]] =
    if (!key.startsWith(operatorKeyPrefix)) None
    else Some(Try(key.stripPrefix(operatorKeyPrefix).toLong).toOption.filter(_ >= 0))

  private val units = Seq("ms" -> 1L, "min" -> 60000L, "s" -> 1000L, "m" -> 60000L, "h" -> 3600000L, "d" -> 86400000L)

  /** A positive duration in ms, or None for `off`. */
  private def duration(name: String, raw: String): Option[Long] = {
    val text = raw.trim.toLowerCase(Locale.ROOT)
    if (text == "off") None
    else {
      val parsed = units.collectFirst {
        case (unit, ms) if text.endsWith(unit) && Try(text.dropRight(unit.length).trim.toLong).toOption.exists(_ > 0) =>
          val n = text.dropRight(unit.length).trim.toLong
          if (n > Long.MaxValue / ms) None else Some(n * ms)
      }.flatten
      if (parsed.isEmpty) {
        throw TxStateErrors.badSetting(name, s"must be a positive duration with a unit (ms, s, m, h or d), e.g. 30m or " +
          s"7d, or off; got '$raw'")
      }
      parsed
    }
  }
}
