package txstate.spark

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s.{JInt, JLong}
import org.json4s.jackson.JsonMethods

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using

/**
 * A micro-batch's timestamp as Spark recorded it in the query's offset log (`offsets/<batch>`,
 * the metadata line's `batchTimestampMs`): fixed before the batch runs and the same on every
 * retry, so rows stamped with it and TTL measured against it are deterministic. Read once per
 * batch per executor JVM, then cached.
 */
private[spark] object BatchTimes {
  private val cacheLimit = 256
  private val cache = new ConcurrentHashMap[(String, Long), java.lang.Long]()

  /**
   * The timestamp of `batchId` of the query whose checkpoint holds `stateRoot` (its `state/`
   * folder). Fails, naming the file, when it is missing or unreadable: a batch that runs has one.
   */
  def of(stateRoot: Path, batchId: Long, hadoopConf: Configuration): Long = {
    val queryRoot = stateRoot.getParent
    val key = (queryRoot.toString, batchId)
    Option(cache.get(key)).map(_.longValue).getOrElse {
      val time = read(new Path(new Path(queryRoot, "offsets"), batchId.toString), hadoopConf)
      if (cache.size >= cacheLimit) cache.clear()
      cache.put(key, time)
      time
    }
  }

  private def read(file: Path, hadoopConf: Configuration): Long = {
    val text =
      try Using.resource(file.getFileSystem(hadoopConf).open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))
      catch { case e: java.io.IOException => throw TxStateErrors.batchTimeUnreadable(file, e.toString, e) }
    val metadata = text.split("\n", 3).lift(1).getOrElse("")
    val parsed = try Some(JsonMethods.parse(metadata) \ "batchTimestampMs") catch { case _: Exception => None }
    parsed.collect {
      case JInt(n) if n >= 0 => n.toLong
      case JLong(n) if n >= 0 => n
    }.getOrElse(throw TxStateErrors.batchTimeUnreadable(file, "its second line has no batchTimestampMs", null))
  }
}
