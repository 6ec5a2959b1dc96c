package txstate.spark

import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success, Try}

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

import txstate.SourceTree
import txstate.engine.EngineOptions

/**
 * The values of tests/fixtures/settings-cases.json through the jar's parser, each set on a real
 * SQLConf and read by TxStateConf.from as a provider reads it. The Python package runs the same
 * table (tests/unit/settings/test_setting_cases.py): both must accept and refuse the same values, with the
 * same result.
 */
final class SettingsCasesTest extends AnyFunSuite with ProviderFixture {
  private val cases = new ObjectMapper().readTree(SourceTree.read("tests/fixtures/settings-cases.json"))
  private val operator = 3L

  /** What TxStateConf made of each setting (for `ttl.operator.<id>`, of operator 3's). */
  private val parsed: Map[String, TxStateConf => Any] = Map(
    "localDir" -> (_.localDir),
    "snapshotInterval" -> (_.store.snapshotInterval),
    "maxUncommittedRecords" -> (_.store.limits.maxRecords),
    "maxUncommittedBytes" -> (_.store.limits.maxBytes),
    "blockCacheSizeMB" -> (_.store.engine.blockCacheBytes),
    "hotCacheSizeMB" -> (_.hotCacheBytes),
    "maxNativeMemoryMB" -> (_.nativeMemoryBytes),
    "maxHeapMemoryMB" -> (_.heapMemoryBytes),
    "writeBufferSizeMB" -> (_.store.engine.writeBufferBytes),
    "maxWriteBufferNumber" -> (_.store.engine.maxWriteBuffers),
    "ttl" -> (_.ttl.default),
    "ttl.operator.<id>" -> (_.ttl.byOperator(operator)))

  private def key(name: String): String = TxStateConf.prefix + name.replace("<id>", operator.toString)

  /** A parsed value as the table writes it: a number, a path, or null (no limit, off, the default). */
  private def asInTable(value: Any): Any = value match {
    case None => null
    case Some(v) => asInTable(v)
    case n: Int => n.toLong
    case other => other
  }

  private def fromTable(node: JsonNode): Any = if (node.isNull) null else if (node.isTextual) node.asText else node.asLong

  private def entries(node: JsonNode): Seq[(String, JsonNode)] = node.properties().asScala.map(e => e.getKey -> e.getValue).toSeq

  private val settingCases = entries(cases.get("settings"))

  test("the table covers every setting of the specification, and TxStateConf defines exactly those") {
    assert(settingCases.map(_._1).toSet == SettingSpec.all.map(_.name).toSet)
    assert(parsed.keySet == TxStateConf.settings.keySet)
  }

  test("every valid value of the table parses in the jar to the table's result") {
    val valid = for ((name, node) <- settingCases; (text, result) <- entries(node.get("valid"))) yield (name, text, result)
    val wrong = valid.flatMap { case (name, text, result) =>
      Try(asInTable(parsed(name)(TxStateConf.from(storeConf(key(name) -> text))))) match {
        case Success(value) if value == fromTable(result) => None
        case outcome => Some(s"${key(name)}='$text': expected ${fromTable(result)}, got $outcome")
      }
    }
    assert(valid.size >= 50 && wrong.isEmpty, wrong.mkString("\n"))
  }

  test("every invalid value is refused naming the setting, the value, what it takes and an example") {
    val invalid = for ((name, node) <- settingCases; text <- node.get("invalid").elements.asScala.map(_.asText).toSeq)
      yield (name, text)
    val wrong = invalid.flatMap { case (name, text) =>
      val expected = s"[TXSTATE_INVALID_SETTING] ${key(name)} must be ${SettingSpec(name).expects}, got '${text.trim}'. " +
        s"For example: ${key(name)}=${SettingSpec(name).example}"
      Try(TxStateConf.from(storeConf(key(name) -> text))) match {
        case Failure(e: IllegalArgumentException) if e.getMessage == expected => None
        case outcome => Some(s"${key(name)}='$text': expected $expected, got $outcome")
      }
    }
    assert(invalid.size >= 50 && wrong.isEmpty, wrong.mkString("\n"))
  }

  test("a per-operator TTL takes the table's operator ids and refuses the others") {
    for ((text, id) <- entries(cases.get("operatorIds").get("valid"))) {
      val conf = TxStateConf.from(storeConf(TxStateConf.prefix + "ttl.operator." + text -> "1h"))
      assert(conf.ttl.byOperator == Map(id.asLong -> Some(3600000L)), text)
    }
    for (text <- cases.get("operatorIds").get("invalid").elements.asScala.map(_.asText)) {
      val e = intercept[IllegalArgumentException](TxStateConf.from(storeConf(TxStateConf.prefix + "ttl.operator." + text -> "1h")))
      assert(e.getMessage.contains("operator id"), s"'$text': ${e.getMessage}")
    }
  }

  test("without settings each one takes the specification's default, which is the engine's own") {
    val conf = TxStateConf.from(storeConf())
    for (spec <- SettingSpec.all if spec.default.isDefined) {
      assert(asInTable(parsed(spec.name)(conf)) == asInTable(spec.defaultValue), spec.name)
    }
    assert(conf.store.engine == EngineOptions(), "settings.json's RocksDB defaults differ from EngineOptions'")
    assert(conf.store.snapshotInterval == 10 && conf.localDir.isEmpty, "the computed defaults")
  }

  test("every setting's example is a value it takes") {
    for (spec <- SettingSpec.all) TxStateConf.from(storeConf(key(spec.name) -> spec.example))
  }
}
