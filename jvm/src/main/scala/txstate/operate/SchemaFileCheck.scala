package txstate.operate

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using
import txstate.spark.StoreSchemaFile

/**
 * The txstate file beside a store's partitions: `state/<op>/_txstate/<store>.schema.json`
 * (docs/ARCHITECTURE.md, "Files in a checkpoint"), read through the read-only view (on `file:` and
 * HDFS the file system's own checksum is checked too) and parsed as the data source parses it.
 */
object SchemaFileCheck {
  private val consequence = "the query itself runs: its providers write this file again when they open. Until " +
    "the query restarts, the txstate data source, interactive queries and followers cannot read this store."

  def findings(checkpoint: OpenedCheckpoint, store: OperatorStore): Seq[Finding] = {
    val file = StoreSchemaFile.path(new Path(checkpoint.root, "state").toString, store.operatorId, store.storeName)
    val problem =
      if (!checkpoint.fs.exists(file)) Some("the store's schema file is missing")
      else try {
        val text = Using.resource(checkpoint.fs.open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))
        StoreSchemaFile.parse(text, file.toString)
        None
      } catch {
        case NonFatal(e) => Some(s"the store's schema file cannot be read: ${e.getMessage}")
      }
    problem.map(Finding(store.label, None, file.toString, _, consequence)).toSeq
  }
}
