package txstate.serve

/**
 * Every error of the serving process, written once (docs/ARCHITECTURE.md, "Errors" and "Serving").
 * Startup errors are `IllegalArgumentException`s that `ServeMain` prints and exits with status 2;
 * request errors are [[HttpFailure]]s that `HttpApi` answers as JSON. No message ever carries the
 * bearer token or the keystore password.
 */
object ServeErrors {
  private def invalid(code: String, message: String) = new IllegalArgumentException(s"[$code] $message")

  // ---- startup ------------------------------------------------------------------------------

  def badArgument(name: String, why: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_BAD_ARGUMENT", s"$name: $why")

  def tokenRequired(host: String, tokenEnv: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_TOKEN_REQUIRED", s"--host $host is not a loopback address, so requests need a bearer " +
      s"token: put it in a file readable only by you and pass --token-file PATH, or set $tokenEnv " +
      "(never on the command line, where ps shows it); or serve on 127.0.0.1")

  def unreadableTokenFile(path: String, why: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_TOKEN_FILE", s"--token-file $path: $why; write the token (one line) to that file")

  def emptyToken(source: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_TOKEN_EMPTY", s"the bearer token from $source is empty; put a long random string there")

  def keystorePasswordMissing(keystore: String, variable: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_KEYSTORE", s"--keystore $keystore needs its password in the environment variable " +
      s"$variable (or name another variable with --keystore-password-env)")

  def unreadableKeystore(keystore: String, why: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_KEYSTORE", s"--keystore $keystore cannot be used: $why; pass a PKCS12 or JKS keystore " +
      "holding one private key and its certificate, and its password")

  def cannotBind(host: String, port: Int, why: String): IllegalArgumentException =
    invalid("TXSTATE_SERVE_BIND", s"cannot listen on $host:$port: $why; pick another --port (0: any free port) or --host")

  // ---- requests -----------------------------------------------------------------------------

  def unauthorized: HttpFailure = HttpFailure(401, "TXSTATE_SERVE_UNAUTHORIZED",
    "this server requires the header 'Authorization: Bearer <token>' with its token",
    Seq("WWW-Authenticate" -> "Bearer realm=\"txstate\""))

  def unreadableBody: HttpFailure = HttpFailure(400, "TXSTATE_SERVE_BAD_REQUEST",
    "the request body could not be read to its end (the connection closed early); send the whole body")

  def notFound(path: String): HttpFailure = HttpFailure(404, "TXSTATE_SERVE_NOT_FOUND",
    s"no endpoint $path; endpoints: POST /v1/query, GET /v1/describe, GET /health, GET /metrics")

  def methodNotAllowed(method: String, path: String, allowed: String): HttpFailure =
    HttpFailure(405, "TXSTATE_SERVE_METHOD_NOT_ALLOWED", s"$method $path is not served; use $allowed $path",
      Seq("Allow" -> allowed))

  def bodyTooLarge(max: Long): HttpFailure = HttpFailure(413, "TXSTATE_SERVE_REQUEST_TOO_LARGE",
    s"the request body is larger than $max bytes (--max-request-bytes); ask for fewer keys per request")

  def pageTooLarge(limit: Long, max: Int): HttpFailure = HttpFailure(400, "TXSTATE_SERVE_PAGE_TOO_LARGE",
    s"query 'limit' $limit is over this server's page limit of $max rows (--max-page); ask for at most $max and " +
      "follow 'continuation' for the next page")

  def badField(field: String, why: String): HttpFailure = HttpFailure(400, "TXSTATE_SERVE_BAD_REQUEST",
    s"""'$field' $why (docs/query-protocol.md, "Request")""")

  def unknownQueryType(queryType: String): HttpFailure = HttpFailure(400, "TXSTATE_SERVE_UNKNOWN_QUERY_TYPE",
    s"unknown query type '$queryType'; this server answers ${HttpApi.queryTypes.mkString(", ")} " +
      "(docs/query-protocol.md)")

  def busy(max: Int): HttpFailure = HttpFailure(503, "TXSTATE_SERVE_BUSY",
    s"$max requests are in flight already (--max-concurrent); retry after a second", Seq("Retry-After" -> "1"))

  def unexpected(e: Throwable): HttpFailure = HttpFailure(500, "TXSTATE_SERVE_INTERNAL",
    s"the server could not answer (${e.getClass.getSimpleName}); the server log has the details")

  /** A caller's mistake the query layer found: its `[TXSTATE_…]` code and message, as a 400. */
  def fromCoded(e: IllegalArgumentException): HttpFailure = {
    val message = Option(e.getMessage).getOrElse("")
    val Coded = """(?s)\[(TXSTATE_[A-Z_]+)\]\s*(.*)""".r
    message match {
      case Coded(code, rest) => HttpFailure(400, code, rest.linesIterator.take(1).mkString)
      case _ => HttpFailure(400, "TXSTATE_SERVE_BAD_REQUEST", message.linesIterator.take(1).mkString)
    }
  }
}

/** An HTTP error answer: status, `[TXSTATE_…]` code, a one-line message and extra headers. */
final case class HttpFailure(status: Int, code: String, message: String, headers: Seq[(String, String)] = Nil)
