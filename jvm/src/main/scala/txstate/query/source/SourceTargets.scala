package txstate.query.source

import java.util.UUID

import org.apache.spark.sql.SparkSession

import txstate.compat.StreamingQueryWrapper
import txstate.spark.LiveStores
import txstate.query.follow.Followers
import txstate.query.{BeforeFirstCommit, StateQueryExecutor, StoreDescription, StoreLocator}

/**
 * A read's store: its description, and the run of a running query whose live stores may answer, or
 * the follower (in this JVM) that answers instead.
 */
private[source] final case class SourceStore(description: StoreDescription, runId: Option[UUID],
    follower: Option[String] = None)

/**
 * Resolves a read's target to its checkpoint and, when a query runs on it in this session, that
 * query's run. Before the query's first commit (even once batch 0 has written the store's
 * metadata) there is no batch to read yet: the read waits up to `waitMs` for it, then says so
 * (`NOT_UP_TO_BOUND`, "no batch committed yet").
 */
private[source] object SourceTargets {
  private val pollMs = 100L

  def resolve(spark: SparkSession, options: SourceOptions): SourceStore = options.target match {
    case SourceTarget.Follower(id) => SourceStore(Followers.get(id).description, None, Some(id))
    case _ => resolveQuery(spark, options)
  }

  private def resolveQuery(spark: SparkSession, options: SourceOptions): SourceStore = {
    val (checkpoint, runId) = options.target match {
      case SourceTarget.Checkpoint(path) =>
        val root = LiveStores.normalize(StoreLocator.qualify(path, spark.sessionState.newHadoopConf()).toString)
        (root, StateQueryExecutor.runningQueryOn(spark, root))
      case SourceTarget.QueryName(name) => running(spark, s"name '$name'")(_.name == name)
      case SourceTarget.QueryId(id) => running(spark, s"id $id")(_.id == id)
      case SourceTarget.Follower(id) => throw new IllegalStateException(s"txstate: follower $id is resolved above")
    }
    val started = System.currentTimeMillis()
    // The wait is here, on the driver, and not in the read's tasks: a task that waited for the
    // first commit would hold an executor slot that the query's first batch may need.
    while (BeforeFirstCommit.partitions(spark, checkpoint, runId, spark.sessionState.newHadoopConf()).isDefined) {
      val waited = System.currentTimeMillis() - started
      if (waited >= options.waitMs) throw SourceErrors.noCommitYet(checkpoint, waited)
      Thread.sleep(math.min(pollMs, options.waitMs - waited))
    }
    SourceStore(StoreLocator.describe(checkpoint, options.operator, options.store, spark.sessionState.newHadoopConf()), runId)
  }

  private def running(spark: SparkSession, what: String)(matches: StreamingQueryWrapper => Boolean)
      : (String, Option[UUID]) = {
    val active = spark.streams.active.toSeq.collect { case q: StreamingQueryWrapper => q }
    active.find(matches).fold(throw SourceErrors.noSuchQuery(what,
      active.map(q => Option(q.name).fold(q.id.toString)(n => s"'$n' (${q.id})")))) { q =>
      (LiveStores.normalize(q.streamingQuery.resolvedCheckpointRoot), Some(q.runId))
    }
  }
}
