package txstate.spark

import scala.util.Try

import org.json4s.{JArray, JObject, JString}
import org.json4s.jackson.JsonMethods

/**
 * The state checkpoint ids a format-v2 commit log entry names (`stateUniqueIds`): per operator,
 * per partition, one id per store in the order of the operator's stores in Spark's operator
 * metadata. Format 1 entries name none.
 */
final case class CommitLogIds(byOperator: Map[Long, IndexedSeq[IndexedSeq[String]]]) {
  def isEmpty: Boolean = byOperator.isEmpty

  def of(operatorId: Long, partition: Int, storeIndex: Int): Option[String] =
    byOperator.get(operatorId).flatMap(_.lift(partition)).flatMap(_.lift(storeIndex))
}

object CommitLogIds {
  /** The ids of one `commits/<batch>` file's text (line 1 the log version, line 2 the JSON). */
  def parse(text: String): CommitLogIds = {
    val json = text.linesIterator.drop(1).mkString("\n")
    if (json.trim.isEmpty) CommitLogIds(Map.empty)
    else JsonMethods.parse(json) \ "stateUniqueIds" match {
      case JObject(operators) => CommitLogIds(operators.flatMap { case (op, partitions) =>
        Try(op.toLong).toOption.map(_ -> (partitions match {
          case JArray(ps) => ps.toIndexedSeq.map {
            case JArray(ids) => ids.toIndexedSeq.collect { case JString(id) => id }
            case _ => IndexedSeq.empty
          }
          case _ => IndexedSeq.empty
        }))
      }.toMap)
      case _ => CommitLogIds(Map.empty)
    }
  }
}
