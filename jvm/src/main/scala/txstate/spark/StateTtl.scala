package txstate.spark

import scala.util.Try

/**
 * The state TTL settings: `ttl` for every stateful operator of the query, `ttl.operator.<id>` for
 * one (the operator id is the number under the checkpoint's `state/` folder; `off` exempts it).
 * Durations take a unit: ms, s, m (or min), h or d (the settings' specification, SettingSpec). Off by default.
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

  /** Reads the TTL keys of `ours` (our settings with the prefix stripped); durations as SettingSpec parses them. */
  def from(ours: Map[String, String]): StateTtl = {
    val prefix = SettingSpec.prefix
    val byOperator = ours.toSeq.flatMap { case (k, v) =>
      operatorKey(k).map {
        case Some(id) => id -> SettingSpec(operatorKeyPrefix + "<id>").parse(prefix + k, v)
        case None => throw TxStateErrors.badSetting(prefix + k,
          s"must end with an operator id (the number of the operator's folder under the checkpoint's state/), e.g. " +
            s"${prefix}${operatorKeyPrefix}0")
      }
    }.toMap
    StateTtl(SettingSpec(key).in(ours), byOperator)
  }

  private val operatorId = "[0-9]+".r

  /** Some(Some(id)) for `ttl.operator.<id>`, Some(None) for a malformed id, None for other keys. */
  private def operatorKey(key: String): Option[Option[Long]] =
    if (!key.startsWith(operatorKeyPrefix)) None
    else Some(Some(key.stripPrefix(operatorKeyPrefix)).filter(id => operatorId.pattern.matcher(id).matches).flatMap(id => Try(id.toLong).toOption))
}
