package txstate.query.follow

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.slf4j.LoggerFactory

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.query.{QueryErrors, StoreLocator}

/**
 * The followers open in this JVM, by id: Python (`txstate_spark.follow`), the `txstate` data source
 * and the serving process find them here. Every follower still open when the JVM exits is closed,
 * so its local replicas are deleted.
 */
object Followers {
  private val log = LoggerFactory.getLogger(getClass)
  private val open = new ConcurrentHashMap[String, Follower]()
  // A client's request id -> the follower it started: a request planned twice (the data source
  // protocol under Spark Connect) starts one follower, not two.
  private val byRequest = new ConcurrentHashMap[String, String]()

  sys.addShutdownHook(open.values.asScala.foreach(f => try f.close() catch { case NonFatal(_) => () }))

  /** Starts following store `storeName` of `operator` (id or name) of the query checkpointed at `checkpoint`. */
  def follow(checkpoint: String, operator: String, storeName: String, hadoopConf: Configuration,
      options: FollowOptions, requestId: Option[String] = None): Follower = synchronized {
    requestId.flatMap(r => Option(byRequest.get(r))).flatMap(id => Option(open.get(id)))
      .getOrElse(start(checkpoint, operator, storeName, hadoopConf, options, requestId))
  }

  private def start(checkpoint: String, operator: String, storeName: String, hadoopConf: Configuration,
      options: FollowOptions, requestId: Option[String]): Follower = {
    val description = StoreLocator.describeNow(checkpoint, operator, storeName, hadoopConf)
    val id = UUID.randomUUID().toString
    val follower = Follower.start(id, description, hadoopConf, options)
    open.put(id, follower)
    requestId.foreach(byRequest.put(_, id))
    log.info(s"txstate: follower $id follows partitions ${follower.partitions.mkString(",")} of store " +
      s"'${description.storeName}' of operator ${description.operatorId} in ${description.checkpoint}")
    follower
  }

  def get(id: String): Follower =
    Option(open.get(id)).getOrElse(throw QueryErrors.unknownFollower(id, open.keys().asScala.toList))

  /** Closes and forgets follower `id`; false when there is none. */
  def close(id: String): Boolean = Option(open.remove(id)).exists { f =>
    byRequest.values().remove(id)
    f.close()
    true
  }
}
