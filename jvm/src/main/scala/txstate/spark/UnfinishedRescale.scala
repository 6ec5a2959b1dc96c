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
 * Refuses to run the batch an in-place rescale added (`migrate --to txstate --partitions N`) when
 * that rescale stopped between writing the batch's offset entry and its commit entry. Spark pins a
 * query's shuffle partition count, so two consecutive offset entries with different counts mean
 * exactly that batch; resumed, it would load the old partitions at the old version under the new
 * count and write over the rescaled state. Spark 4.2 and newer refuse it themselves
 * (`STREAMING_UNFINISHED_REPARTITION_DETECTED`); 3.5 to 4.1 do not, so the provider checks, once
 * per store instance, at its first batch.
 */
private[spark] object UnfinishedRescale {
  private val partitionsKey = "spark.sql.shuffle.partitions"

  /** Fails when batch `batchId` of the query holding `stateRoot` changes the partition count of the batch before. */
  def check(stateRoot: Path, batchId: Long, hadoopConf: Configuration): Unit = if (batchId > 0) {
    val offsets = new Path(stateRoot.getParent, "offsets")
    (partitionsOf(new Path(offsets, batchId.toString), hadoopConf),
      partitionsOf(new Path(offsets, (batchId - 1).toString), hadoopConf)) match {
      case (Some(now), Some(before)) if now != before =>
        throw TxStateErrors.unfinishedRescale(stateRoot.getParent.toString, batchId, before, now)
      case _ => ()
    }
  }

  // None when the entry or its setting is absent (an old batch cleaned up, a test without a log).
  private def partitionsOf(file: Path, hadoopConf: Configuration): Option[Int] = Try {
    val fs = file.getFileSystem(hadoopConf)
    if (!fs.exists(file)) None
    else {
      val text = Using.resource(fs.open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))
      text.split("\n", 3).lift(1).flatMap { metadata =>
        JsonMethods.parse(metadata) \ "conf" \ partitionsKey match {
          case JString(n) => Try(n.toInt).toOption
          case _ => None
        }
      }
    }
  }.toOption.flatten
}
