package txstate.serve

import scala.annotation.tailrec
import scala.util.Try

/**
 * The serving process's command line, checked once into typed fields (docs/serving.md). Secrets
 * are never arguments: the bearer token comes from `--token-file` or [[ServeOptions.tokenEnv]], the
 * keystore password from the variable `--keystore-password-env` names.
 *
 * @param conf `--conf KEY=VALUE` settings: `spark.hadoop.*` (the checkpoint's file system) and
 *             `spark.sql.streaming.stateStore.txstate.*` (RocksDB memory of the replicas)
 */
final case class ServeOptions(
    checkpoint: String,
    operator: String,
    store: String = "default",
    partitions: Option[Seq[Int]] = None,
    host: String = "127.0.0.1",
    port: Int = 8470,
    tokenFile: Option[String] = None,
    keystore: Option[String] = None,
    keystorePasswordEnv: String = ServeOptions.keystorePasswordEnv,
    pollIntervalMs: Long = 200L,
    localDir: Option[String] = None,
    maxRequestBytes: Long = 1L << 20,
    maxPage: Int = 10000,
    maxConcurrent: Int = 16,
    conf: Seq[(String, String)] = Nil)

object ServeOptions {
  val tokenEnv = "TXSTATE_SERVE_TOKEN"
  val keystorePasswordEnv = "TXSTATE_SERVE_KEYSTORE_PASSWORD"
  private val confPrefixes = Seq("spark.hadoop.", "spark.sql.streaming.stateStore.txstate.")

  val usage: String =
    "ServeMain CHECKPOINT --operator OP [--store S] [--partitions 0,1] [--host H] [--port P] " +
      "[--token-file F] [--keystore K] [--keystore-password-env VAR] [--poll-interval-ms N] [--local-dir D] " +
      "[--max-request-bytes N] [--max-page N] [--max-concurrent N] [--conf KEY=VALUE ...]"

  /** Parses `args`; a bad or missing argument is a `[TXSTATE_SERVE_BAD_ARGUMENT]` naming it. */
  def parse(args: Seq[String]): ServeOptions = {
    @tailrec def loop(rest: List[String], checkpoint: Option[String], flags: Map[String, String],
        conf: Vector[(String, String)]): ServeOptions = rest match {
      case Nil => build(checkpoint, flags, conf)
      case "--conf" :: kv :: tail => loop(tail, checkpoint, flags, conf :+ keyValue(kv))
      case flag :: value :: tail if known.contains(flag) =>
        if (flags.contains(flag)) throw ServeErrors.badArgument(flag, "given twice")
        loop(tail, checkpoint, flags + (flag -> value), conf)
      case flag :: Nil if flag == "--conf" || known.contains(flag) => throw ServeErrors.badArgument(flag, "needs a value")
      case flag :: _ if flag.startsWith("--") =>
        throw ServeErrors.badArgument(flag, s"unknown option; usage: $usage")
      case path :: tail =>
        if (checkpoint.nonEmpty) throw ServeErrors.badArgument(path, s"a second CHECKPOINT; usage: $usage")
        loop(tail, Some(path), flags, conf)
    }
    loop(args.toList, None, Map.empty, Vector.empty)
  }

  private val known = Set("--operator", "--store", "--partitions", "--host", "--port", "--token-file", "--keystore",
    "--keystore-password-env", "--poll-interval-ms", "--local-dir", "--max-request-bytes", "--max-page",
    "--max-concurrent")

  private def build(checkpoint: Option[String], flags: Map[String, String], conf: Seq[(String, String)]): ServeOptions = {
    val d = ServeOptions("", "")
    def text(flag: String, default: String): String = flags.get(flag).map(_.trim).getOrElse(default)
    def long(flag: String, default: Long, min: Long, max: Long): Long = flags.get(flag).fold(default) { v =>
      val n = Try(v.trim.toLong).toOption.getOrElse(throw ServeErrors.badArgument(flag, s"expected a whole number, got '$v'"))
      if (n < min || n > max) throw ServeErrors.badArgument(flag, s"must be between $min and $max, got $n")
      n
    }
    ServeOptions(
      checkpoint = checkpoint.filter(_.trim.nonEmpty)
        .getOrElse(throw ServeErrors.badArgument("CHECKPOINT", s"the query's checkpoint location is missing; usage: $usage")),
      operator = flags.get("--operator").map(_.trim).filter(_.nonEmpty)
        .getOrElse(throw ServeErrors.badArgument("--operator", "missing: the stateful operator's id (0, 1, ...) or name")),
      store = text("--store", d.store),
      partitions = flags.get("--partitions").map(partitionList),
      host = text("--host", d.host),
      port = long("--port", d.port, 0, 65535).toInt,
      tokenFile = flags.get("--token-file"),
      keystore = flags.get("--keystore"),
      keystorePasswordEnv = text("--keystore-password-env", d.keystorePasswordEnv),
      pollIntervalMs = long("--poll-interval-ms", d.pollIntervalMs, 10, 3600000),
      localDir = flags.get("--local-dir"),
      maxRequestBytes = long("--max-request-bytes", d.maxRequestBytes, 64, 1L << 30),
      maxPage = long("--max-page", d.maxPage, 1, 100000).toInt,
      maxConcurrent = long("--max-concurrent", d.maxConcurrent, 1, 1024).toInt,
      conf = conf)
  }

  private def partitionList(v: String): Seq[Int] = {
    val parts = v.split(",").map(_.trim).filter(_.nonEmpty).toSeq
    val numbers = parts.map(p => Try(p.toInt).toOption.filter(_ >= 0)
      .getOrElse(throw ServeErrors.badArgument("--partitions", s"expected partition numbers such as 0,1,2, got '$v'")))
    if (numbers.isEmpty) throw ServeErrors.badArgument("--partitions", "is empty; leave it out to follow every partition")
    numbers
  }

  private def keyValue(kv: String): (String, String) = kv.split("=", 2) match {
    case Array(k, v) if k.trim.nonEmpty =>
      val key = k.trim
      if (!confPrefixes.exists(key.startsWith)) {
        throw ServeErrors.badArgument("--conf", s"$key is not read by the serving process; it reads " +
          confPrefixes.map(_ + "*").mkString(" and "))
      }
      key -> v
    case _ => throw ServeErrors.badArgument("--conf", s"expected KEY=VALUE, got '$kv'")
  }
}
