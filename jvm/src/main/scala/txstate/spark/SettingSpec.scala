package txstate.spark

import java.util.Locale

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using

/**
 * One of our settings as the specification both halves of txstate-spark read defines it:
 * python/txstate_spark/settings/settings.json, which the build copies into the jar as `txstate-settings.json`
 * (the repository holds one copy). The Python package parses values by the same rules
 * (`txstate_spark.settings.spec`), and tests/fixtures/settings-cases.json runs through both, so
 * `configure()` and `submit-args` refuse exactly the values the jar refuses.
 *
 * @param name    the key after [[TxStateConf.prefix]] (`ttl.operator.<id>` for one operator's TTL)
 * @param kind    which values it takes (the specification's `kinds`, whose words every error uses)
 * @param minimum the lowest value, in the unit a plain number has (MiB for the `*SizeMB` settings)
 * @param default a value of the kind, or None where the default is computed (the meaning says how)
 * @param example a valid value, shown in errors
 * @param meaning one line
 */
final case class SettingSpec(name: String, kind: String, minimum: Long, default: Option[String], example: String,
    meaning: String) {
  import SettingSpec._

  /** What a value must be, in the words of the specification (Python's errors use the same). */
  def expects: String = kinds(kind).replace("{minimum}", minimum.toString)

  /** The default, parsed (None where the specification computes it, or where it means no limit or off). */
  lazy val defaultValue: Option[Long] = default.flatMap(parse(prefix + name, _))

  /** This setting's value in `ours` (our settings, prefix stripped), else its default. */
  def in(ours: Map[String, String]): Option[Long] = ours.get(name).fold(defaultValue)(parse(prefix + name, _))

  /**
   * A value as the store uses it: Some(bytes, milliseconds or a count), None for -1 (no limit) or
   * off. Trimmed, units in any case. A value the kind does not take is `[TXSTATE_INVALID_SETTING]`,
   * naming `key`, the value, what it takes and an example.
   */
  def parse(key: String, raw: String): Option[Long] = {
    require(kind != "path", s"$name is a path, not a number")
    val text = raw.trim.toLowerCase(Locale.ROOT)
    if (none.get(kind).contains(text)) None
    else {
      val value = text match {
        case number(digits, unit) => amount(BigInt(digits), unit)
        case _ => None
      }
      val (lowest, highest) = range
      Some(value.filter(v => v >= lowest && v <= highest).getOrElse(
        throw TxStateErrors.badValue(key, raw, expects, example)).toLong)
    }
  }

  /** The number in the store's unit (bytes, milliseconds, a count), or None if the unit does not fit. */
  private def amount(number: BigInt, unit: String): Option[BigInt] = kind match {
    case "whole-number" | "count-or-unlimited" => Some(number).filter(_ => unit.isEmpty)
    case "duration-or-off" => durationUnits.get(unit).map(number * _) // a duration needs its unit
    case "mebibytes" if unit.isEmpty => Some(number * mebibyte)
    case _ => sizeUnits.get(if (unit.isEmpty) "b" else unit).map(number * _)
        .filter(bytes => kind != "mebibytes" || bytes % mebibyte == 0) // the *SizeMB settings take whole MiB
  }

  /** The lowest and highest value (an Int for whole numbers, else a Long). */
  private def range: (BigInt, BigInt) = kind match {
    case "mebibytes" => (BigInt(minimum) * mebibyte, BigInt(Long.MaxValue))
    case "duration-or-off" => (BigInt(1), BigInt(Long.MaxValue))
    case "whole-number" => (BigInt(minimum), BigInt(Int.MaxValue))
    case _ => (BigInt(minimum), BigInt(Long.MaxValue))
  }
}

object SettingSpec {
  /** Where the jar carries the specification (copied from python/txstate_spark/settings/settings.json by the build). */
  val resource = "txstate-settings.json"

  private val spec: JsonNode = Using.resource(Option(classOf[SettingSpec].getClassLoader.getResourceAsStream(resource))
    .getOrElse(throw new IllegalStateException(s"the txstate jar lacks $resource, the settings' specification: " +
      "build it with build/sbt package")))(new ObjectMapper().readTree(_))

  val prefix: String = spec.get("prefix").asText

  /** Every setting, in the specification's order. */
  val all: Seq[SettingSpec] = spec.get("settings").elements.asScala.map { s =>
    SettingSpec(s.get("name").asText, s.get("kind").asText, Option(s.get("minimum")).fold(0L)(_.asLong),
      Option(s.get("default")).filterNot(_.isNull).map(_.asText), s.get("example").asText, s.get("meaning").asText)
  }.toSeq

  private val byName: Map[String, SettingSpec] = all.map(s => s.name -> s).toMap

  def apply(name: String): SettingSpec =
    byName.getOrElse(name, throw new IllegalStateException(s"$resource defines no setting $name"))

  private val kinds: Map[String, String] = texts(spec.get("kinds"))
  private val sizeUnits: Map[String, Long] = texts(spec.get("units").get("size")).map { case (u, f) => u -> f.toLong }
  private val durationUnits: Map[String, Long] =
    texts(spec.get("units").get("duration")).map { case (u, f) => u -> f.toLong }
  private val mebibyte = BigInt(1L << 20)
  // The text that means None: no limit, or no TTL.
  private val none = Map("count-or-unlimited" -> "-1", "bytes-or-unlimited" -> "-1", "duration-or-off" -> "off")
  private val number = "(-?[0-9]+) *([a-z]*)".r

  private def texts(node: JsonNode): Map[String, String] =
    node.properties().asScala.map(e => e.getKey -> e.getValue.asText).toMap
}
