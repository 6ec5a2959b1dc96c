package txstate.query

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.types.{DataType, IntegerType, LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.StateApi.RangeKeyScanStateEncoderSpec
import txstate.engine.WriteStamp
import txstate.spark.{ProviderFixture, StoreSchema}

/** The query protocol's answers as the JVM writes them (AnswerJson, docs/query-protocol.md, "Response"). */
final class AnswerJsonTest extends AnyFunSuite with ProviderFixture {
  private val mapper = new ObjectMapper()
  private val keySchema = new StructType().add("user", StringType).add("day", IntegerType)
  private val valueSchema = new StructType().add("n", LongType)
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)
  private val description = StoreDescription("file:/ck", "file:/ck/state", 0, Some("stateStoreSave"), "default", 4,
    StoreSchema(keySchema, valueSchema, RangeKeyScanStateEncoderSpec(keySchema, Seq(1)), multiValued = false), Some(2))

  private val newer = Position(5, Some("id-5"), 1795000000500L, Seq("""{"topic":{"0":42}}""", "3"))
  private val older = Position(4, None, 1795000000000L, Nil)
  private def row(user: String, day: Int, n: Long, written: WriteStamp = WriteStamp(4, 1795000000000L)) =
    StoredRow(key(user, day), value(n), written)

  private def json(node: JsonNode): JsonNode = mapper.readTree(AnswerJson.render(node))
  private def answer(result: StateQueryResult, query: StateQuery, timestamped: Boolean = false,
      namedRows: Boolean = false): JsonNode =
    json(AnswerJson.result(result, query, keySchema, valueSchema, timestamped, namedRows))
  private def partition(answer: JsonNode, p: Int): JsonNode =
    answer.get("partitions").elements().asScala.find(_.get("partition").asInt == p).get

  /** Partition 0 failed, 1 answered from `older`, 2 from `newer`. */
  private def result(answered1: RawAnswer, answered2: RawAnswer, continuation: Option[String] = None) = StateQueryResult(
    Map(2 -> QueryResult(2, Right(answered2), Some(newer), Seq("partition 2: version 5")),
      0 -> QueryResult(0, Left(QueryFailure(FailureReason.NotPresent, "no store loaded")), None, Nil),
      1 -> QueryResult(1, Right(answered1), Some(older), Nil)),
    MergedPosition(Map(2 -> newer, 1 -> older)), continuation)

  test("a store description says where the store is, how it is partitioned and how its rows are encoded") {
    val d = json(AnswerJson.description(description, mapper.readTree("""{"runId": "r-1"}""")))
    assert(d.fieldNames().asScala.toSeq == Seq("checkpoint", "operatorId", "operatorName", "storeName", "numPartitions",
      "keySchema", "valueSchema", "prefixKeyColumns", "rangeKeyOrdinals", "runId"))
    assert(d.get("checkpoint").asText == "file:/ck" && d.get("operatorName").asText == "stateStoreSave")
    assert(d.get("numPartitions").asInt == 4 && d.get("runId").asText == "r-1")
    assert(DataType.fromJson(d.get("keySchema").toString) == keySchema)
    assert(DataType.fromJson(d.get("valueSchema").toString) == valueSchema)
    assert(d.get("prefixKeyColumns").asInt == 0 && d.get("rangeKeyOrdinals").toString == "[1]")
    val unnamed = json(AnswerJson.description(description.copy(operatorName = None), mapper.readTree("""{"follower": "f-1"}""")))
    assert(unnamed.get("operatorName").isNull && unnamed.get("runId").isNull && unnamed.get("follower").asText == "f-1")
  }

  test("a query without a commit yet is described as pending, with its partition count") {
    val d = json(AnswerJson.pending("file:/ck", 3))
    assert(d.get("pending").asBoolean && d.get("numPartitions").asInt == 3 && d.get("checkpoint").asText == "file:/ck")
    assert(d.get("message").asText.startsWith("no batch committed yet"))
  }

  test("each partition answers its result or its failure, in partition order, with its own position") {
    val a = answer(result(RawAnswer.Values(Seq(None), single = true), RawAnswer.Values(Seq(Some(row("ann", 3, 7))),
      single = true)), KeyQuery(key("ann", 3)))
    assert(a.get("partitions").elements().asScala.map(_.get("partition").asInt).toSeq == Seq(0, 1, 2))
    val failed = partition(a, 0)
    assert(!failed.get("success").asBoolean && failed.get("failureReason").asText == "NOT_PRESENT")
    assert(failed.get("failureMessage").asText == "no store loaded" && failed.get("position").isNull)
    assert(partition(a, 1).get("success").asBoolean && partition(a, 1).get("result").isNull, "an absent key is null")
    assert(partition(a, 2).get("result").toString == "[7]")
    assert(partition(a, 2).get("position").toString == """{"version":5,"batchId":4,"checkpointId":"id-5",""" +
      """"commitTimeMs":1795000000500,"sourceOffsets":["{\"topic\":{\"0\":42}}","3"]}""")
    assert(partition(a, 2).get("executionInfo").toString == """["partition 2: version 5"]""")
    assert(partition(a, 1).get("executionInfo").toString == "[]")
  }

  test("the merged position is the oldest partition's, without a checkpoint id, plus every partition's own") {
    val merged = answer(result(RawAnswer.Values(Seq(None), single = true), RawAnswer.Values(Seq(None), single = true)),
      KeyQuery(key("ann", 3))).get("position")
    assert(merged.get("version").asLong == 4 && merged.get("batchId").asLong == 3 && merged.get("checkpointId").isNull)
    assert(merged.get("commitTimeMs").asLong == older.commitTimeMs)
    assert(merged.get("partitions").fieldNames().asScala.toSeq == Seq("1", "2"))
    assert(merged.get("partitions").get("2").get("checkpointId").asText == "id-5")
    val none = answer(StateQueryResult(Map.empty, MergedPosition(Map.empty), None), ScanQuery(10, None, None))
    assert(none.get("position").toString == """{"version":null,"batchId":null,"checkpointId":null,""" +
      """"commitTimeMs":null,"sourceOffsets":null,"partitions":{}}""")
    assert(none.get("partitions").isEmpty && none.get("continuation").isNull)
  }

  test("a merged position sent back as a bound asks each partition for at least the batch it answered from") {
    val merged = answer(result(RawAnswer.Values(Seq(None), single = true), RawAnswer.Values(Seq(None), single = true)),
      KeyQuery(key("ann", 3))).get("position")
    val batches = merged.get("partitions").properties().asScala.map(e => s""""${e.getKey}": ${e.getValue.get("batchId")}""")
    val request = s"""{"query": {"type": "scan"}, "bound": {"type": "atLeast", "batchId": ${merged.get("batchId")},
      "partitions": {${batches.mkString(", ")}}}}"""
    val bound = RequestJson.request(RequestJson.parse(request), StoreReference("file:/ck", None, "0", "default"),
      description.schema).bound
    assert(Seq(1, 2, 3).map(bound.minBatch) == Seq(3L, 4L, 3L))
  }

  test("multi-key values come in request order; timestamped rows say when they were last written, null if unknown") {
    val values = RawAnswer.Values(Seq(Some(row("a", 1, 7)), None, Some(row("b", 2, 8, WriteStamp.unknown))), single = false)
    val plain = answer(result(values, values), MultiKeyQuery(Nil))
    assert(partition(plain, 1).get("result").toString == "[[7],null,[8]]")
    val stamped = answer(result(values, values), MultiKeyQuery(Nil), timestamped = true)
    assert(partition(stamped, 1).get("result").toString == """[{"value":[7],"lastWrittenBatch":4,""" +
      """"lastWrittenMs":1795000000000},null,{"value":[8],"lastWrittenBatch":null,"lastWrittenMs":null}]""")
  }

  test("a page carries its rows and a continuation for its partition alone; the answer's covers every partition") {
    val next = key("b", 2).getBytes
    val page = RawAnswer.Page(Seq(row("a", 1, 7), row("b", 2, 8)), Some(next))
    val last = RawAnswer.Page(Seq(row("c", 1, 9, WriteStamp.unknown)), None)
    val everyPartition = ContinuationToken("scan", Map(1 -> next)).encode
    val a = answer(result(page, last, Some(everyPartition)), ScanQuery(2, None, None), timestamped = true)
    val first = partition(a, 1).get("result")
    assert(first.get("rows").toString == """[{"key":["a",1],"value":[7],"lastWrittenBatch":4,""" +
      """"lastWrittenMs":1795000000000},{"key":["b",2],"value":[8],"lastWrittenBatch":4,"lastWrittenMs":1795000000000}]""")
    val token = ContinuationToken.decode(first.get("continuation").asText, "scan")
    assert(token.after.keySet == Set(1) && token.after(1).toSeq == next.toSeq)
    assert(partition(a, 2).get("result").get("continuation").isNull)
    assert(partition(a, 2).get("result").get("rows").get(0).get("lastWrittenBatch").isNull)
    assert(a.get("continuation").asText == everyPartition)
  }

  test("with namedRows every key and value is an object by column name; without it, arrays as before") {
    val page = RawAnswer.Page(Seq(row("a", 1, 7)), None)
    val found = RawAnswer.Values(Seq(Some(row("a", 1, 7)), None), single = false)
    val rows = answer(result(page, page), ScanQuery(2, None, None), namedRows = true)
    assert(partition(rows, 1).get("result").get("rows").toString == """[{"key":{"user":"a","day":1},"value":{"n":7}}]""")
    assert(partition(answer(result(page, page), ScanQuery(2, None, None)), 1).get("result").get("rows").toString ==
      """[{"key":["a",1],"value":[7]}]""")
    val values = answer(result(found, found), MultiKeyQuery(Nil), namedRows = true)
    assert(partition(values, 2).get("result").toString == """[{"n":7},null]""")
    val stamped = answer(result(found, found), MultiKeyQuery(Nil), timestamped = true, namedRows = true)
    assert(partition(stamped, 2).get("result").get(0).toString ==
      """{"value":{"n":7},"lastWrittenBatch":4,"lastWrittenMs":1795000000000}""")
    val one = RawAnswer.Values(Seq(Some(row("a", 1, 7))), single = true)
    assert(partition(answer(result(one, one), KeyQuery(key("a", 1)), namedRows = true), 1).get("result").toString ==
      """{"n":7}""")
  }
}
