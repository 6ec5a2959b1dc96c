package txstate.operate

import org.apache.spark.sql.SparkSession
import org.json4s.{JBool, JInt, JString}
import org.json4s.jackson.JsonMethods

/**
 * The entry points of `inspect` and `verify` for the Python client (JSON options in, JSON report
 * out), and `progress` for its progress line (polled from another thread while one of them works).
 * Options: `checkpoint` (both), `minBatchesToRetain` and `deep` (verify).
 */
object OperateGateway {
  @volatile private var current: Option[OperateProgress] = None

  def inspect(session: SparkSession, optionsJson: String): String = {
    val checkpoint = OpenedCheckpoint.open(stringOption(optionsJson, "checkpoint"), session.sparkContext.hadoopConfiguration)
    new Inspector(checkpoint, started()).run().json
  }

  def verify(session: SparkSession, optionsJson: String): String = {
    val hadoopConf = session.sparkContext.hadoopConfiguration
    val checkpoint = OpenedCheckpoint.open(stringOption(optionsJson, "checkpoint"), hadoopConf)
    val options = JsonMethods.parse(optionsJson)
    val retain = options \ "minBatchesToRetain" match {
      case JInt(n) if n >= 1 => Some(n.toInt)
      case JInt(n) => throw OperateErrors.badArgument("minBatchesToRetain", s"must be at least 1, got $n")
      case _ => None
    }
    val deep = options \ "deep" match {
      case JBool(b) => b
      case _ => false
    }
    new Verifier(checkpoint, hadoopConf, retain, deep, started()).run().json
  }

  /** The running call's progress as JSON (`{}` when none has started in this JVM). */
  def progress(): String = current.fold("{}")(_.json)

  private def started(): OperateProgress = {
    val progress = new OperateProgress
    current = Some(progress)
    progress
  }

  private def stringOption(json: String, name: String): String = JsonMethods.parse(json) \ name match {
    case JString(s) => s
    case _ => throw OperateErrors.badArgument(name, "is required (the query's checkpointLocation)")
  }
}
