package txstate.serve

import java.io.{ByteArrayOutputStream, IOException, InputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.Semaphore

import scala.util.Try
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import com.sun.net.httpserver.{HttpExchange, HttpHandler}
import org.apache.hadoop.conf.Configuration
import org.slf4j.LoggerFactory

import txstate.query.follow.FollowerCalls
import txstate.query.follow.Follower

/** The limits a server enforces on each request (docs/serving.md, "Limits"). */
final case class ServeLimits(maxRequestBytes: Long, maxPage: Int, maxConcurrent: Int)

/** One answer: status, content type, body and extra headers. */
final case class HttpAnswer(status: Int, contentType: String, body: Array[Byte], headers: Seq[(String, String)] = Nil)

/**
 * The HTTP endpoints of a serving process (docs/serving.md): `POST /v1/query`, `GET /v1/describe`,
 * `GET /health`, `GET /metrics`. Every request is answered, whatever goes wrong: a caller's mistake
 * is a 4xx with a `[TXSTATE_…]` code and a one-line message, anything else a 500 whose details
 * (and stack trace) go to the server log only. No handler exception reaches the HTTP server.
 */
final class HttpApi(follower: Follower, hadoopConf: Configuration, token: Option[BearerToken], limits: ServeLimits,
    metrics: ServeMetrics) extends HttpHandler {
  private val log = LoggerFactory.getLogger(classOf[HttpApi])
  private val mapper = new ObjectMapper()
  private val permits = new Semaphore(limits.maxConcurrent)

  override def handle(exchange: HttpExchange): Unit = {
    val path = Option(exchange.getRequestURI.getRawPath).getOrElse("/")
    val endpoint = if (HttpApi.endpoints.contains(path)) path else "other"
    val answer =
      try answerOf(exchange, path)
      catch {
        case e: IllegalArgumentException if Option(e.getMessage).exists(_.startsWith("[TXSTATE_")) =>
          failure(ServeErrors.fromCoded(e))
        case NonFatal(e) =>
          log.error(s"txstate serve: ${exchange.getRequestMethod} $path failed", e)
          failure(ServeErrors.unexpected(e))
      }
    metrics.answered(endpoint, answer.status)
    try send(exchange, answer)
    catch { case NonFatal(e) => log.debug(s"txstate serve: could not send the answer to $path", e) }
    finally exchange.close()
  }

  private def answerOf(exchange: HttpExchange, path: String): HttpAnswer = {
    val method = exchange.getRequestMethod
    val authorized = token.forall(_.accepts(Option(exchange.getRequestHeaders.getFirst("Authorization"))))
    // /health stays open so load balancers can probe it; every other path, even an unknown one,
    // needs the token first, so an unauthenticated caller learns nothing about the server.
    if (!authorized && path != "/health") failure(ServeErrors.unauthorized)
    else (path, method) match {
      case ("/v1/query", "POST") => limited(query(readBody(exchange)))
      case ("/v1/describe", "GET") => limited(json(200, FollowerCalls.describe(follower)))
      case ("/health", "GET") =>
        val (status, body) = ServeHealth.answer(follower)
        json(status, mapper.writeValueAsString(body))
      case ("/metrics", "GET") =>
        text(200, PrometheusText.render(follower.status, follower.partitions.size, metrics), PrometheusText.contentType)
      case (known, other) if HttpApi.endpoints.contains(known) =>
        failure(ServeErrors.methodNotAllowed(other, known, HttpApi.endpoints(known)))
      case (unknown, _) => failure(ServeErrors.notFound(unknown))
    }
  }

  /** Runs `answer` within --max-concurrent; over it, a 503 at once (with Retry-After). */
  private def limited(answer: => HttpAnswer): HttpAnswer =
    if (!permits.tryAcquire()) {
      metrics.rejected("concurrency")
      failure(ServeErrors.busy(limits.maxConcurrent))
    } else {
      metrics.inFlight.incrementAndGet()
      try answer
      finally {
        metrics.inFlight.decrementAndGet()
        permits.release()
      }
    }

  private def query(body: Either[HttpFailure, String]): HttpAnswer = body match {
    case Left(tooLarge) => failure(tooLarge)
    case Right(text) =>
      RequestChecks(text, limits.maxPage, () => metrics.rejected("page")) match {
        case Left(f) => failure(f)
        case Right(request) => json(200, FollowerCalls.execute(follower, request, hadoopConf))
      }
  }

  /** The body as UTF-8, or a 413 past --max-request-bytes (read no further than that). */
  private def readBody(exchange: HttpExchange): Either[HttpFailure, String] = {
    val max = limits.maxRequestBytes
    val declared = Option(exchange.getRequestHeaders.getFirst("Content-Length")).flatMap(n => Try(n.trim.toLong).toOption)
    val body =
      try Right(if (declared.exists(_ > max)) None else readAtMost(exchange.getRequestBody, max))
      catch {
        case e: IOException =>
          // The client went away while sending its body; the answer will most likely reach nobody.
          log.debug(s"txstate serve: ${exchange.getRequestURI.getRawPath}: could not read the request body", e)
          Left(ServeErrors.unreadableBody)
      }
    body.flatMap(_.map(new String(_, UTF_8)).toRight {
      metrics.rejected("request_bytes")
      ServeErrors.bodyTooLarge(max)
    })
  }

  private def readAtMost(in: InputStream, max: Long): Option[Array[Byte]] = {
    val out = new ByteArrayOutputStream()
    val buffer = new Array[Byte](8192)
    var total = 0L
    var n = in.read(buffer)
    while (n >= 0 && total <= max) {
      out.write(buffer, 0, n)
      total += n
      if (total <= max) n = in.read(buffer)
    }
    if (total > max) None else Some(out.toByteArray)
  }

  private def json(status: Int, body: String): HttpAnswer = text(status, body, "application/json; charset=utf-8")

  private def text(status: Int, body: String, contentType: String): HttpAnswer =
    HttpAnswer(status, contentType, body.getBytes(UTF_8))

  private def failure(f: HttpFailure): HttpAnswer = {
    val node = mapper.createObjectNode()
    node.put("error", f.code)
    node.put("message", f.message)
    HttpAnswer(f.status, "application/json; charset=utf-8", mapper.writeValueAsBytes(node), f.headers)
  }

  private def send(exchange: HttpExchange, answer: HttpAnswer): Unit = {
    val headers = exchange.getResponseHeaders
    headers.set("Content-Type", answer.contentType)
    headers.set("Cache-Control", "no-store")
    answer.headers.foreach { case (k, v) => headers.set(k, v) }
    exchange.sendResponseHeaders(answer.status, if (answer.body.isEmpty) -1L else answer.body.length.toLong)
    if (answer.body.nonEmpty) exchange.getResponseBody.write(answer.body)
  }
}

object HttpApi {
  /** Each endpoint and the one method it answers. */
  val endpoints: Map[String, String] = Map("/v1/query" -> "POST", "/v1/describe" -> "GET", "/health" -> "GET",
    "/metrics" -> "GET")
  val queryTypes: Seq[String] = Seq("key", "multiKey", "range", "prefix", "scan")
}
