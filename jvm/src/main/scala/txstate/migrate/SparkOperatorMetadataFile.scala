package txstate.migrate

import org.apache.hadoop.fs.Path
import org.json4s.{JArray, JInt, JObject}
import org.json4s.jackson.JsonMethods

/**
 * Spark's operator metadata file `state/<op>/_metadata/metadata` (line 1 the format version, then
 * one JSON object) as rescaling rewrites it: only each store's `numPartitions` changes.
 */
object SparkOperatorMetadataFile {
  def path(root: Path, operatorId: Long): Path = new Path(root, s"state/$operatorId/_metadata/metadata")

  def withPartitions(text: String, numPartitions: Int, file: String): String = {
    val lines = text.linesIterator.toVector
    if (lines.size < 2 || lines.head != "v1") {
      throw MigrationErrors.badArgument(file, s"is not Spark's operator metadata version 1 (it starts with " +
        s"'${lines.headOption.getOrElse("")}'); rescaling cannot update it")
    }
    val rescaled = JsonMethods.parse(lines.drop(1).mkString("\n")).transformField {
      case ("stateStoreInfo", JArray(stores)) => "stateStoreInfo" -> JArray(stores.map {
        case JObject(fields) => JObject(fields.map {
          case ("numPartitions", _) => "numPartitions" -> JInt(numPartitions)
          case other => other
        })
        case other => other
      })
    }
    s"v1\n${JsonMethods.compact(rescaled)}"
  }
}
