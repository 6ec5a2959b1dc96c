package txstate.serve

import java.util.concurrent.atomic.AtomicInteger

import com.fasterxml.jackson.databind.ObjectMapper
import org.scalatest.funsuite.AnyFunSuite

/** The server's own checks of a query body, before the query layer reads it (docs/serving.md, "Errors"). */
final class RequestChecksTest extends AnyFunSuite {
  private val rejected = new AtomicInteger()
  private def check(body: String, maxPage: Int = 50) = RequestChecks(body, maxPage, () => rejected.incrementAndGet())
  private def failure(body: String): HttpFailure = check(body).swap.getOrElse(fail(s"$body was accepted"))

  test("a page over --max-page is refused and counted; a paged query without a limit gets at most --max-page") {
    val before = rejected.get
    assert(failure("""{"query": {"type": "scan", "limit": 51}}""").code == "TXSTATE_SERVE_PAGE_TOO_LARGE")
    assert(rejected.get == before + 1)
    val added = new ObjectMapper().readTree(check("""{"query": {"type": "prefix", "prefix": [1]}}""").toOption.get)
    assert(added.get("query").get("limit").asInt == 50)
    assert(new ObjectMapper().readTree(check("""{"query": {"type": "scan"}}""", maxPage = 5000).toOption.get)
      .get("query").get("limit").asInt == 1000)
    val keyQuery = """{"query": {"type": "key", "key": [1]}}"""
    assert(check(keyQuery) == Right(keyQuery))
  }

  test("an unknown query type, a limit that is not a number and a malformed bound are 400s naming the field") {
    assert(failure("""{"query": {"type": "all"}}""").message.contains("'all'"))
    assert(failure("""{"query": {"type": 3}}""").code == "TXSTATE_SERVE_UNKNOWN_QUERY_TYPE")
    assert(failure("""{"query": {"type": "scan", "limit": 2.5}}""").message.contains("'query.limit'"))
    assert(failure("""{"query": {"type": "key", "key": [1]}, "bound": 3}""").message.contains("'bound'"))
    assert(failure("""{"query": {"type": "key", "key": [1]}, "bound": {"type": "atLeastBatch"}}""").message
      .contains("batchId"))
    assert(failure("""{"query": {"type": "key", "key": [1]}, "bound": {"type": "atLeast", "partitions": {"-1": 3}}}""")
      .message.contains("partition numbers"))
    assert(failure("""{"query": {"type": "key", "key": [1]}, "bound": {"type": "sometime"}}""").message
      .contains("unbounded, atLeastBatch or atLeast"))
    val bounded = """{"query": {"type": "key", "key": [1]}, "bound": {"type": "atLeast", "partitions": {"0": 3}}}"""
    assert(check(bounded) == Right(bounded))
  }

  test("what is not a request object goes on unchanged, for the query layer's own message") {
    Seq("{not json", "[1]", "{}", """{"query": 3}""").foreach(b => assert(check(b) == Right(b)))
  }
}
