package txstate.spark

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Try

import org.apache.hadoop.fs.{FileSystem, Path}
import org.json4s.{JArray, JInt, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods
import org.slf4j.LoggerFactory

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using

/** One store of an operator as Spark's operator metadata lists it. */
final case class SparkStoreInfo(name: String, numColsPrefixKey: Int, numPartitions: Int)

/**
 * What Spark's operator metadata (`state/<op>/_metadata`) says about one operator: its name, its
 * stores, and the metadata version (2 is written by transformWithState, whose state schema lives
 * in separate files).
 */
final case class SparkOperatorMetadata(name: Option[String], stores: Seq[SparkStoreInfo], version: Int) {
  def partitionsByStore: Map[String, Int] = stores.map(s => s.name -> s.numPartitions).toMap
}

object SparkOperatorMetadata {
  private val log = LoggerFactory.getLogger(getClass)
  val none: SparkOperatorMetadata = SparkOperatorMetadata(None, Nil, 0)

  /** Version 1 lives in `_metadata/metadata`, version 2 in `_metadata/v2/<batch>` (newest wins). */
  def read(fs: FileSystem, operatorDir: Path): SparkOperatorMetadata = {
    val v1 = new Path(operatorDir, "_metadata/metadata")
    val v2Dir = new Path(operatorDir, "_metadata/v2")
    val v2 = if (!fs.exists(v2Dir)) None
      else fs.listStatus(v2Dir).toSeq.flatMap(s => Try(s.getPath.getName.toLong).toOption.map(_ -> s.getPath))
        .sortBy(_._1).lastOption
        .map(_._2)
    v2.map(_ -> 2).orElse(Some(v1 -> 1).filter(f => fs.exists(f._1))).fold(none) { case (f, version) =>
      val text = Using.resource(fs.open(f))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))
      // Line 1 is the format version ("v1", "v2"); the rest is one JSON object.
      val json = text.linesIterator.drop(1).mkString("\n")
      try parse(JsonMethods.parse(json), version)
      catch {
        case e: Exception =>
          log.warn(s"txstate: ignoring Spark's operator metadata $f, which cannot be parsed: $e")
          none
      }
    }
  }

  private def parse(json: JValue, version: Int): SparkOperatorMetadata = {
    val name = (json \ "operatorInfo" \ "operatorName") match {
      case JString(n) => Some(n)
      case _ => None
    }
    val stores = (json \ "stateStoreInfo") match {
      case JArray(items) => items.collect { case store: JObject =>
        ((store \ "storeName"), (store \ "numColsPrefixKey"), (store \ "numPartitions")) match {
          case (JString(s), prefix, JInt(n)) =>
            Some(SparkStoreInfo(s, prefix match { case JInt(p) => p.toInt; case _ => 0 }, n.toInt))
          case _ => None
        }
      }.flatten
      case _ => Nil
    }
    SparkOperatorMetadata(name, stores, version)
  }
}
