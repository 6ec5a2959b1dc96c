package txstate.spark

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s.JString
import org.json4s.jackson.JsonMethods

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using

/**
 * The shuffle partition count a query's offset log entry records (`offsets/<batch>`, the metadata
 * line's `conf`): every Spark line records it there, and it is the count the batch runs with.
 */
object ShufflePartitions {
  private val key = "spark.sql.shuffle.partitions"

  /** The count `offsetFile` records; None when the file, or the setting in it, is absent or unreadable. */
  def recorded(offsetFile: Path, hadoopConf: Configuration): Option[Int] = Try {
    val fs = offsetFile.getFileSystem(hadoopConf)
    if (!fs.exists(offsetFile)) None
    else {
      val text = Using.resource(fs.open(offsetFile))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))
      text.split("\n", 3).lift(1).flatMap { metadata =>
        JsonMethods.parse(metadata) \ "conf" \ key match {
          case JString(n) => Try(n.toInt).toOption
          case _ => None
        }
      }
    }
  }.toOption.flatten
}
