package txstate.serve

import java.net.{InetAddress, InetSocketAddress}
import java.util.concurrent.{CountDownLatch, Executors, ThreadFactory}
import java.util.concurrent.atomic.AtomicInteger

import scala.util.control.NonFatal

import com.sun.net.httpserver.{HttpServer, HttpsConfigurator, HttpsServer}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.StateStoreConf
import org.apache.spark.sql.internal.SQLConf
import org.slf4j.LoggerFactory

import txstate.spark.TxStateConf
import txstate.query.follow.{FollowOptions, Follower, Followers}

/** A running server: its follower, its HTTP server and the URL it listens on. Closing stops both. */
final class Serving(val follower: Follower, server: HttpServer, val url: String) extends AutoCloseable {
  private val closed = new AtomicInteger()

  /** Stops answering, then closes the follower (which deletes its local replicas). Idempotent. */
  override def close(): Unit = if (closed.getAndIncrement() == 0) {
    try server.stop(0)
    finally Followers.close(follower.id)
  }
}

/**
 * `python -m txstate_spark serve` (docs/serving.md; docs/ARCHITECTURE.md, "Serving"): a follower of
 * one store set, answering the query protocol over HTTP. No Spark session: a Hadoop Configuration
 * reads the checkpoint and Spark's jars provide the key encoders. Prints one line,
 * `txstate serve: listening on <url>`, on stdout once it answers; exits 2 on a bad argument.
 */
object ServeMain {
  private val log = LoggerFactory.getLogger(getClass)

  def main(args: Array[String]): Unit = {
    val serving =
      try start(ServeOptions.parse(args.toSeq), sys.env)
      catch {
        case e: IllegalArgumentException =>
          System.err.println(s"txstate serve: error: ${e.getMessage}")
          System.exit(2)
          throw e
        case NonFatal(e) =>
          log.error("txstate serve: could not start", e)
          System.err.println(s"txstate serve: could not start: ${e.getMessage}")
          System.exit(1)
          throw e
      }
    val stopped = new CountDownLatch(1)
    sys.addShutdownHook {
      try serving.close()
      catch { case NonFatal(e) => log.warn("txstate serve: the follower did not close cleanly", e) }
      finally stopped.countDown()
    }
    System.out.println(s"txstate serve: listening on ${serving.url}")
    System.out.flush()
    stopped.await()
  }

  /** Starts the follower, then the server (so it never answers before holding the newest batch). */
  def start(options: ServeOptions, env: Map[String, String]): Serving = {
    val token = Auth.token(options, env)
    val tls = options.keystore.map(Tls.context(_, options.keystorePasswordEnv, env))
    val hadoopConf = new Configuration()
    options.conf.collect { case (k, v) if k.startsWith("spark.hadoop.") => hadoopConf.set(k.stripPrefix("spark.hadoop."), v) }
    val txConf = txStateConf(options.conf)
    val follower = Followers.follow(options.checkpoint, options.operator, options.store, hadoopConf, FollowOptions(
      partitions = options.partitions,
      pollIntervalMs = options.pollIntervalMs,
      localDir = options.localDir.orElse(txConf.localDir).getOrElse(System.getProperty("java.io.tmpdir")),
      engine = txConf.store.engine))
    try {
      val metrics = new ServeMetrics
      val api = new HttpApi(follower, hadoopConf, token,
        ServeLimits(options.maxRequestBytes, options.maxPage, options.maxConcurrent), metrics)
      val address =
        try new InetSocketAddress(InetAddress.getByName(options.host), options.port)
        catch { case NonFatal(e) => throw ServeErrors.badArgument("--host", s"'${options.host}' is not a known address (${e.getMessage})") }
      val server =
        try tls.fold(HttpServer.create(address, 128)) { context =>
          val https = HttpsServer.create(address, 128)
          https.setHttpsConfigurator(new HttpsConfigurator(context))
          https
        } catch { case e: java.io.IOException => throw ServeErrors.cannotBind(options.host, options.port, e.getMessage) }
      server.createContext("/", api)
      // More threads than --max-concurrent, so requests over the limit are refused at once, not queued.
      server.setExecutor(Executors.newFixedThreadPool(options.maxConcurrent + 4, daemonThreads))
      server.start()
      val port = server.getAddress.getPort
      val host = if (options.host.contains(":")) s"[${options.host}]" else options.host
      val url = s"${if (tls.isDefined) "https" else "http"}://$host:$port"
      log.info(s"txstate serve: follower ${follower.id} of partitions ${follower.partitions.mkString(",")} answers on " +
        s"$url (${if (token.isDefined) "bearer token required" else "no token"})")
      new Serving(follower, server, url)
    } catch {
      case e: Throwable =>
        try Followers.close(follower.id) catch { case NonFatal(s) => e.addSuppressed(s) }
        throw e
    }
  }

  /** The txstate settings among `conf`, read as a writer reads them (unknown txstate keys are refused). */
  private def txStateConf(conf: Seq[(String, String)]): TxStateConf = {
    val sqlConf = new SQLConf()
    conf.collect { case (k, v) if k.startsWith(TxStateConf.prefix) => sqlConf.setConfString(k, v) }
    TxStateConf.from(new StateStoreConf(sqlConf))
  }

  private val daemonThreads: ThreadFactory = {
    val n = new AtomicInteger()
    r => {
      val t = new Thread(r, s"txstate-serve-http-${n.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  }
}
