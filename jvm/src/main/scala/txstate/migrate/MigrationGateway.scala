package txstate.migrate

import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory

/**
 * The entry points of migrate: `run` for the Python client (JSON options in, JSON report out),
 * `progress` for its progress bar (polled from another thread while `run` works), and `main` for
 * spark-submit users:
 * `spark-submit --class txstate.migrate.MigrationGateway <jar> CHECKPOINT --to txstate`.
 */
object MigrationGateway {
  private val log = LoggerFactory.getLogger(getClass)
  @volatile private var current: Option[MigrationProgress] = None

  def run(session: SparkSession, optionsJson: String): String =
    run(session, MigrationOptions.fromJson(optionsJson), line => log.info(s"txstate migrate: $line")).json

  /** The running migration's progress as JSON (`{}` when none has started in this JVM). */
  def progress(): String = current.fold("{}")(_.json)

  def main(args: Array[String]): Unit = {
    val options = try MigrationOptions.fromArgs(args.toSeq) catch {
      case e: IllegalArgumentException =>
        System.err.println(e.getMessage)
        sys.exit(2)
    }
    val session = SparkSession.builder().appName("txstate-migrate").getOrCreate()
    val exitCode = try {
      val report = run(session, options, line => System.err.println(s"txstate migrate: $line"))
      println(report.json)
      0
    } catch {
      case e: Exception if e.getMessage != null && e.getMessage.startsWith("[TXSTATE_MIGRATION_") =>
        System.err.println(e.getMessage)
        2
    } finally session.stop()
    sys.exit(exitCode)
  }

  private def run(session: SparkSession, options: MigrationOptions, logLine: String => Unit): MigrationReport = {
    val progress = new MigrationProgress(logLine)
    current = Some(progress)
    val hadoopConf = session.sparkContext.hadoopConfiguration
    new Migration(session.conf.getAll, hadoopConf, progress).run(options)
  }
}
