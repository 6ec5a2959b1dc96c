package txstate.query

import java.util.UUID

import org.apache.spark.sql.types.{IntegerType, LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.StateApi.NoPrefixKeyStateEncoderSpec
import txstate.spark.{ProviderFixture, StoreSchema}

/**
 * The query protocol's requests as the JVM reads them (RequestJson, docs/query-protocol.md,
 * "Request"): every malformed field fails with `TXSTATE_QUERY_BAD_REQUEST` naming the field.
 */
final class RequestJsonTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = new StructType().add("user", StringType).add("day", IntegerType)
  private val schema = StoreSchema(keySchema, new StructType().add("n", LongType), NoPrefixKeyStateEncoderSpec(keySchema),
    multiValued = false)
  private val store = StoreReference("file:/ck", None, "0", "default")
  private val key = new RowMaker(keySchema)
  private val user = new RowMaker(new StructType().add("user", StringType))

  private def request(json: String): StateQueryRequest = RequestJson.request(RequestJson.parse(json), store, schema)
  private def query(json: String): StateQuery = request(s"""{"query": $json}""").query
  private def bound(json: String): PositionBound = request(s"""{"query": {"type": "scan"}, "bound": $json}""").bound

  private def refused(json: String, code: String = "TXSTATE_QUERY_BAD_REQUEST"): String = {
    val message = intercept[IllegalArgumentException](request(json)).getMessage
    assert(message.startsWith(s"[$code] "), message)
    message.stripPrefix(s"[$code] ")
  }
  private def refusedQuery(json: String, code: String = "TXSTATE_QUERY_BAD_REQUEST") =
    refused(s"""{"query": $json}""", code)
  private def refusedBound(json: String) = refused(s"""{"query": {"type": "scan"}, "bound": $json}""")

  test("a key query reads its key into the store's row format; flags are off, every partition, no bound") {
    assert(request("""{"query": {"type": "key", "key": ["ann", 3]}}""") == StateQueryRequest(store,
      KeyQuery(key("ann", 3)), None, PositionBound.Unbounded, activeOnly = false, executionInfo = false,
      checkpointReads = false, timestamped = false))
    val all = request("""{"query": {"type": "key", "key": ["ann", 3]}, "partitions": [2, 0], "requireActive": true,
      "executionInfo": true, "checkpointReads": true, "timestamped": true}""")
    assert(all.partitions.contains(Seq(2, 0)) && all.activeOnly && all.executionInfo && all.checkpointReads &&
      all.timestamped)
  }

  test("a multi-key query keeps its keys in order; a malformed key names its place") {
    assert(query("""{"type": "multiKey", "keys": [["b", 1], ["a", 2]]}""") == MultiKeyQuery(Seq(key("b", 1), key("a", 2))))
    assert(refusedQuery("""{"type": "multiKey", "keys": ["a", 1]}""", "TXSTATE_QUERY_BAD_KEY").startsWith("keys[0]"))
    assert(refusedQuery("""{"type": "multiKey", "keys": [["a", 1], ["b", "x"]]}""", "TXSTATE_QUERY_BAD_KEY")
      .startsWith("keys[1]"))
    assert(refusedQuery("""{"type": "multiKey", "keys": {"a": 1}}""") == "'keys' must be an array")
    assert(refusedQuery("""{"type": "key", "key": ["a"]}""", "TXSTATE_QUERY_BAD_KEY").startsWith("key: expected an array of 2"))
  }

  test("range, prefix and scan queries read their bounds, order, page size and continuation") {
    assert(query("""{"type": "range", "lower": null, "upper": ["b", 0], "descending": true, "limit": 5,
      "continuation": "abc"}""") == RangeQuery(None, Some(key("b", 0)), descending = true, 5, Some("abc"), None))
    assert(query("""{"type": "prefix", "prefix": ["ann"]}""") == PrefixQuery(user("ann"), 1, PagedQuery.defaultLimit, None, None))
    assert(query("""{"type": "scan"}""") == ScanQuery(1000, None, None))
    assert(refusedQuery("""{"type": "prefix", "prefix": []}""", "TXSTATE_QUERY_BAD_KEY") ==
      "a prefix has 1 to 2 leading key columns of struct<user:string,day:int>, got 0")
    assert(refusedQuery("""{"type": "prefix", "prefix": ["a", 1, 2]}""", "TXSTATE_QUERY_BAD_KEY").endsWith("got 3"))
    assert(refusedQuery("""{"type": "prefix", "prefix": "ann"}""") == "'prefix' must be an array")
  }

  test("a page size that is not a whole number is refused naming the field, not read as another size") {
    for (limit <- Seq("\"ten\"", "2.5", "true", "4294967297")) {
      assert(refusedQuery(s"""{"type": "scan", "limit": $limit}""") ==
        s"'query.limit' must be a whole number of rows per partition (1 to 100000), got $limit")
    }
  }

  test("changedSince is a batch or a batch time, exactly one, a whole number of 0 or more") {
    def since(json: String) = query(s"""{"type": "scan", "changedSince": $json}""").asInstanceOf[ScanQuery].changedSince
    assert(since("""{"batch": 3}""").contains(ChangedSince.Batch(3)) && since("""{"ms": 0}""").contains(ChangedSince.TimeMs(0)))
    assert(since("null").isEmpty)
    assert(refusedQuery("""{"type": "scan", "changedSince": {"batch": -1}}""") ==
      "'changedSince.batch' must be a batch id (0 or more), got -1")
    for (bad <- Seq("""{"batch": 1.5}""", """{"batch": "3"}""", """{"ms": -5}""", """{"batch": 1, "ms": 2}""", "{}", "3",
        """{"when": 1}""")) {
      assert(refusedQuery(s"""{"type": "range", "changedSince": $bad}""").startsWith("'changedSince"), bad)
    }
    for (lookup <- Seq("""{"type": "key", "key": ["a", 1]""", """{"type": "multiKey", "keys": []""")) {
      assert(refusedQuery(s"""$lookup, "changedSince": {"batch": 1}}""").startsWith("'changedSince' filters range, " +
        "prefix and scan queries, not a"))
    }
  }

  test("a key may name its columns: an object is read as the array in schema order would be, in any order") {
    assert(query("""{"type": "key", "key": {"day": 3, "user": "ann"}}""") == KeyQuery(key("ann", 3)))
    assert(query("""{"type": "multiKey", "keys": [{"user": "b", "day": 1}, ["a", 2]]}""") ==
      MultiKeyQuery(Seq(key("b", 1), key("a", 2))))
    assert(query("""{"type": "range", "lower": {"user": "a", "day": 0}, "upper": null}""") ==
      RangeQuery(Some(key("a", 0)), None, descending = false, PagedQuery.defaultLimit, None, None))
    assert(query("""{"type": "prefix", "prefix": {"user": "ann"}}""") == PrefixQuery(user("ann"), 1, PagedQuery.defaultLimit, None, None))
    assert(query("""{"type": "prefix", "prefix": {"day": 3, "user": "ann"}}""") ==
      PrefixQuery(key("ann", 3), 2, PagedQuery.defaultLimit, None, None))
  }

  test("a key object with an unknown or a missing column is refused naming every column of the key") {
    val columns = "struct<user:string,day:int> has the columns user, day: name each of them once " +
      """(e.g. {"user": ..., "day": ...}), or send an array of 2 values in that order"""
    assert(refusedQuery("""{"type": "key", "key": {"usr": "ann", "day": 3}}""", "TXSTATE_QUERY_BAD_KEY") ==
      s"key: has no column 'usr' and is missing 'user'; $columns")
    assert(refusedQuery("""{"type": "key", "key": {"user": "ann"}}""", "TXSTATE_QUERY_BAD_KEY") ==
      s"key: is missing 'day'; $columns")
    assert(refusedQuery("""{"type": "multiKey", "keys": [["a", 1], {"user": "b", "day": 1, "hour": 2}]}""",
      "TXSTATE_QUERY_BAD_KEY") == s"keys[1]: has no column 'hour'; $columns")
    assert(refusedQuery("""{"type": "key", "key": {"user": "ann", "day": "3"}}""", "TXSTATE_QUERY_BAD_KEY")
      .startsWith("key.day: expected int"))
    assert(refusedQuery("""{"type": "key", "key": "ann"}""", "TXSTATE_QUERY_BAD_KEY") ==
      "key: expected an array of 2 values for struct<user:string,day:int> (or an object naming user, day), got \"ann\"")
  }

  test("a prefix object names the leading key columns; other columns are refused naming the ones it may name") {
    assert(refusedQuery("""{"type": "prefix", "prefix": {"day": 3}}""", "TXSTATE_QUERY_BAD_KEY") ==
      "prefix: a prefix object names the leading key columns, one of {user} {user, day}, got {day}: name the " +
        "first columns of the key (user, day), or send an array of them in that order")
    assert(refusedQuery("""{"type": "prefix", "prefix": {}}""", "TXSTATE_QUERY_BAD_KEY").endsWith("got 0"))
  }

  test("named rows are asked for with namedRows; a request without it gets arrays, as before") {
    def named(json: String) = RequestJson.namedRows(RequestJson.parse(json))
    assert(named("""{"query": {"type": "scan"}, "namedRows": true}"""))
    assert(!named("""{"query": {"type": "scan"}}""") && !named("""{"query": {"type": "scan"}, "namedRows": false}"""))
  }

  test("an unknown query type is read as such, for every partition to answer UNKNOWN_QUERY_TYPE") {
    assert(query("""{"type": "window", "size": 3}""") == UnknownQuery("window"))
  }

  test("bounds: none, at least a batch, or at least a position per partition (the oldest for the others)") {
    assert(request("""{"query": {"type": "scan"}}""").bound == PositionBound.Unbounded)
    Seq("null", """{"type": "unbounded"}""").foreach(b => assert(bound(b) == PositionBound.Unbounded, b))
    assert(bound("""{"type": "atLeastBatch", "batchId": 3}""") == PositionBound.AtLeastBatch(3))
    val perPartition = bound("""{"type": "atLeast", "batchId": 9, "partitions": {"0": 3, "1": 4}}""")
    assert(Seq(0, 1, 7).map(perPartition.minBatch) == Seq(3L, 4L, 3L))
    assert(Seq(0, 5).map(bound("""{"type": "atLeast", "batchId": 5}""").minBatch) == Seq(5L, 5L))
    assert(bound("""{"type": "atLeast"}""").minBatch(0) == -1L)
  }

  test("a malformed bound names the field") {
    assert(refusedBound("""{"type": "atLeastBatch"}""") == "'bound.batchId' must be a batch number, got nothing")
    assert(refusedBound("""{"type": "atLeastBatch", "batchId": "3"}""") == "'bound.batchId' must be a batch number, got \"3\"")
    assert(refusedBound("""{"type": "atLeast", "partitions": {"x": 3}}""") == "bound.partitions has 'x', not a partition number")
    assert(refusedBound("""{"type": "atLeast", "partitions": {"0": 1.5}}""") ==
      "'bound.partitions.0' must be a batch number, got 1.5")
    assert(refusedBound("""{"type": "sometime"}""") == "unknown position bound type 'sometime'")
  }

  test("partitions are null (all of them) or an array of partition numbers") {
    assert(request("""{"query": {"type": "scan"}, "partitions": null}""").partitions.isEmpty)
    assert(request("""{"query": {"type": "scan"}, "partitions": []}""").partitions.contains(Nil))
    for (bad <- Seq("\"0\"", "[0, \"a\"]", "[1.5]", "{\"0\": 1}")) {
      assert(refused(s"""{"query": {"type": "scan"}, "partitions": $bad}""") ==
        "'partitions' must be an array of partition numbers", bad)
    }
  }

  test("what is not a request object with a typed query is refused, saying what is missing") {
    assert(refused("{not json").startsWith("not valid JSON: "))
    assert(refused("[1]") == "the request must be a JSON object")
    Seq("{}", """{"query": 3}""", """{"query": null}""").foreach(r => assert(refused(r) == "'query' must be an object", r))
    assert(refusedQuery("{}") == "'type' is missing")
  }

  test("a run id is a UUID, or null; anything else is refused naming the field") {
    val id = UUID.randomUUID()
    assert(RequestJson.runIdOf(RequestJson.parse(s"""{"runId": "$id"}""")).contains(id))
    assert(RequestJson.runIdOf(RequestJson.parse("""{"runId": null}""")).isEmpty)
    val e = intercept[IllegalArgumentException](RequestJson.runIdOf(RequestJson.parse("""{"runId": "run-7"}""")))
    assert(e.getMessage == "[TXSTATE_QUERY_BAD_REQUEST] 'runId' must be a query run id (a UUID), got \"run-7\"")
  }
}
