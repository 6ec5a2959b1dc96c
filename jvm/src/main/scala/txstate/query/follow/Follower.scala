package txstate.query.follow

import java.io.File
import java.nio.file.Files
import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.slf4j.LoggerFactory

import txstate.engine.CommittedView
import txstate.spark.{RowCodec, SparkOperatorMetadata}
import txstate.query.{QueryErrors, StoreDescription}
import txstate.store.{FollowStep, FollowerReplica, LocalDirectory}

/**
 * How far a follower is behind its leader: the newest batch every followed partition has applied,
 * the leader's newest committed batch, and the difference in batches and in milliseconds (how long
 * the oldest batch not applied yet has been committed; 0 when current).
 */
final case class FollowerLag(appliedBatch: Option[Long], leaderBatch: Option[Long], batches: Long, millis: Long)

/** A follower's lag and what it has done: polls, catch-ups, re-anchors, failures and the last error. */
final case class FollowerStatus(lag: FollowerLag, polls: Long, catchUps: Long, reanchors: Long, failures: Long,
    lastError: Option[String], closed: Boolean, nativeMemoryBytes: Long)

/**
 * A read-only follower of one store set of a streaming query (KIP-813; docs/ARCHITECTURE.md,
 * "Followers"): one [[FollowerReplica]] per followed partition, moved forward by a daemon thread
 * each time Spark's commit log shows a newer finished batch. It publishes only batches the leader
 * has committed to that log, and reads nothing it could change.
 */
final class Follower private (
    val id: String,
    val description: StoreDescription,
    val partitions: Seq[Int],
    storeIndex: Int,
    hadoopConf: Configuration,
    options: FollowOptions) extends AutoCloseable {
  private val log = LoggerFactory.getLogger(classOf[Follower])
  private val leader = new LeaderLog(description.checkpoint, hadoopConf)
  private val polls, catchUps, reanchors, failures = new AtomicLong()
  @volatile private var replicas = Map.empty[Int, FollowerReplica] // opened at the leader's first commit
  @volatile private var leaderNewest = Option.empty[LeaderCommit]
  @volatile private var lastError = Option.empty[String]
  @volatile private var closed = false
  private val tail = new Thread(() => run(), s"txstate-follower-$id")
  tail.setDaemon(true)

  /** The store set's rows are read with this codec. */
  def codec: RowCodec = description.schema.codec

  /**
   * Runs `read` on the newest version partition `partition` holds; None when this follower does
   * not follow it, holds no version yet, or is re-anchoring it for longer than `waitMs`.
   */
  def read[T](partition: Int, waitMs: Long)(read: CommittedView => T): Option[T] =
    replicas.get(partition).flatMap(_.readCommittedView(waitMs)(read))

  def follows(partition: Int): Boolean = partitions.contains(partition)

  def lag: FollowerLag = {
    val applied = if (replicas.isEmpty) None else Some(replicas.values.map(_.committed.version).min - 1).filter(_ >= 0)
    val newest = leaderNewest.map(_.batchId)
    val behind = (applied, newest) match {
      case (_, None) => 0L
      case (None, Some(n)) => n + 1
      case (Some(a), Some(n)) => math.max(n - a, 0L)
    }
    val millis =
      if (behind == 0) 0L
      else {
        val oldestMissing = applied.fold(0L)(_ + 1)
        val since = leader.committedAtMs(oldestMissing).orElse(leaderNewest.map(_.committedAtMs))
        since.fold(0L)(t => math.max(System.currentTimeMillis() - t, 0L))
      }
    FollowerLag(applied, newest, behind, millis)
  }

  def status: FollowerStatus = FollowerStatus(lag, polls.get, catchUps.get, reanchors.get, failures.get, lastError,
    closed, replicas.values.map(_.nativeMemoryUsed).sum)

  /** Applies the leader's newest committed batch to every followed partition (what the tail thread does). */
  def poll(): Unit = synchronized {
    if (!closed) {
      polls.incrementAndGet()
      leader.newest().foreach { commit =>
        leaderNewest = Some(commit)
        val version = commit.batchId + 1
        if (replicas.isEmpty) replicas = openReplicas(idsInFileNames = !commit.ids.isEmpty)
        replicas.foreach { case (p, replica) =>
          val first = replica.committed.version == 0 // a replica's first load is not a re-anchor
          replica.advanceTo(version, commit.ids.of(description.operatorId, p, storeIndex)) match {
            case FollowStep.CaughtUp(_) => catchUps.incrementAndGet()
            case FollowStep.Reanchored(_) if !first => reanchors.incrementAndGet()
            case _ => ()
          }
        }
      }
      lastError = None
    }
  }

  private def openReplicas(idsInFileNames: Boolean): Map[Int, FollowerReplica] = {
    val root = new File(options.localDir)
    root.mkdirs()
    val opened = Map.newBuilder[Int, FollowerReplica]
    try {
      partitions.foreach { p =>
        val dir = Files.createTempDirectory(root.toPath, s"txstate-follower-op${description.operatorId}-part$p-").toFile
        val storeRoot = StateStoreId(description.stateRoot, description.operatorId, p, description.storeName)
          .storeCheckpointLocation()
        opened += p -> FollowerReplica.open(LocalDirectory.temporary(dir), storeRoot, hadoopConf, options.engine,
          idsInFileNames, options.replayLimit, s"follower $id of partition $p of ${description.storeName} " +
            s"(operator ${description.operatorId}) in ${description.checkpoint}")
      }
      opened.result()
    } catch {
      case e: Throwable =>
        opened.result().values.foreach(r => try r.close() catch { case NonFatal(s) => e.addSuppressed(s) })
        throw e
    }
  }

  private def run(): Unit =
    while (!closed) {
      try poll()
      catch {
        // A close interrupts a poll mid-read: that is the follower stopping, not a failure to count.
        case NonFatal(e) if closed => log.debug(s"txstate: follower $id stopped during a poll", e)
        case NonFatal(e) =>
          failures.incrementAndGet()
          lastError = Some(Follower.messageOf(e))
          log.warn(s"txstate: follower $id could not apply the leader's newest batch; trying again", e)
      }
      try Thread.sleep(options.pollIntervalMs) catch { case _: InterruptedException => () }
    }

  private def start(): Follower = {
    tail.start()
    this
  }

  /** Stops following and deletes the local replicas. Idempotent. */
  def close(): Unit = {
    closed = true
    tail.interrupt()
    synchronized {
      val failures = replicas.values.toSeq.flatMap(r => try { r.close(); None } catch { case NonFatal(e) => Some(e) })
      replicas = Map.empty
      failures.headOption.foreach { first => failures.tail.foreach(first.addSuppressed); throw first }
    }
  }
}

object Follower {
  private val firstPollAttempts = 3

  /**
   * The first poll, made again while it fails behind a leader that has moved on. The leader runs
   * in another process (`serve`) or on other executors, so no lock keeps its cleanup from deleting
   * the changelogs of the batch this poll read as the newest before they are replayed; the leader's
   * next batch then has a snapshot and changelogs of its own.
   */
  @scala.annotation.tailrec
  private def firstPoll(follower: Follower, attempt: Int): Unit = {
    val retry = try { follower.poll(); false }
    catch {
      case NonFatal(e) if attempt < firstPollAttempts &&
          follower.leader.newest().map(_.batchId) != follower.leaderNewest.map(_.batchId) =>
        follower.log.info(s"txstate: follower ${follower.id} could not load the leader's batch " +
          s"${follower.leaderNewest.map(_.batchId).getOrElse(-1L)}, which the leader has moved past; trying its newest: $e")
        true
    }
    if (retry) firstPoll(follower, attempt + 1)
  }

  private[query] def messageOf(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).find(m => m != null && m.contains("[TXSTATE_"))
      .getOrElse(e.toString)

  /**
   * Starts following `description`'s store set. The first poll runs now, so the follower is current
   * when this returns (or the leader has no committed batch yet); a checkpoint written by a newer
   * txstate-spark is refused here (`TXSTATE_FOLLOWER_NEWER_FORMAT`).
   */
  private[query] def start(id: String, description: StoreDescription, hadoopConf: Configuration,
      options: FollowOptions): Follower = {
    val partitions = options.partitions.getOrElse(0 until description.numPartitions).distinct.sorted
    partitions.find(p => p < 0 || p >= description.numPartitions).foreach { p =>
      throw QueryErrors.badRequest(s"partition $p does not exist: store '${description.storeName}' of operator " +
        s"${description.operatorId} has partitions 0 to ${description.numPartitions - 1}")
    }
    val operatorDir = new Path(description.stateRoot, description.operatorId.toString)
    val stores = SparkOperatorMetadata.read(operatorDir.getFileSystem(hadoopConf), operatorDir).stores
    val storeIndex = math.max(stores.indexWhere(_.name == description.storeName), 0)
    val follower = new Follower(id, description, partitions, storeIndex, hadoopConf, options)
    try firstPoll(follower, attempt = 1)
    catch {
      case e: Throwable =>
        try follower.close() catch { case NonFatal(s) => e.addSuppressed(s) }
        throw e
    }
    follower.start()
  }
}
