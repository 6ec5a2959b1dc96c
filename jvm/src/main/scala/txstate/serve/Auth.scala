package txstate.serve

import java.net.InetAddress
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.security.MessageDigest

import scala.util.control.NonFatal

/**
 * A bearer token the server requires in `Authorization: Bearer <token>`. Only a SHA-256 digest of
 * it is kept, and compared in constant time, so neither a timing difference nor a heap dump of a
 * log line gives it away; `toString` never shows it.
 */
final class BearerToken private (digest: Array[Byte]) {
  /** True when `authorization` (the header's value) carries this token. */
  def accepts(authorization: Option[String]): Boolean = authorization.map(_.trim) match {
    case Some(value) if value.regionMatches(true, 0, "Bearer ", 0, 7) =>
      MessageDigest.isEqual(digest, BearerToken.sha256(value.substring(7).trim))
    case _ => false
  }

  override def toString: String = "BearerToken(****)"
}

object BearerToken {
  private def sha256(token: String): Array[Byte] = MessageDigest.getInstance("SHA-256").digest(token.getBytes(UTF_8))

  def of(token: String, source: String): BearerToken = {
    if (token.trim.isEmpty) throw ServeErrors.emptyToken(source)
    new BearerToken(sha256(token.trim))
  }
}

/** Which token, if any, the server requires (docs/serving.md, "Authentication"). */
object Auth {
  /**
   * The token from `--token-file` (first line) or the environment; required when `host` is not a
   * loopback address, since then anyone on the network could read the state.
   */
  def token(options: ServeOptions, env: Map[String, String]): Option[BearerToken] = {
    val token = options.tokenFile.map(fromFile).orElse(
      env.get(ServeOptions.tokenEnv).map(BearerToken.of(_, s"the environment variable ${ServeOptions.tokenEnv}")))
    if (token.isEmpty && !isLoopback(options.host)) throw ServeErrors.tokenRequired(options.host, ServeOptions.tokenEnv)
    token
  }

  def isLoopback(host: String): Boolean =
    try InetAddress.getByName(host).isLoopbackAddress
    catch { case NonFatal(_) => false }

  private def fromFile(path: String): BearerToken = {
    val lines =
      try Files.readAllLines(Paths.get(path), UTF_8)
      catch { case NonFatal(e) => throw ServeErrors.unreadableTokenFile(path, s"cannot be read (${e.getClass.getSimpleName})") }
    BearerToken.of(if (lines.isEmpty) "" else lines.get(0), s"--token-file $path")
  }
}
