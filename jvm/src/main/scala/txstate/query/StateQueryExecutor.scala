package txstate.query

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkEnv
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, TxStateSparkBridge}

import txstate.compat.StreamingQueryWrapper
import txstate.engine.CommitPoint
import txstate.spark.{LiveStores, RowCodec}

/**
 * Runs a request on the driver (docs/ARCHITECTURE.md, "Interactive queries"):
 *  1. resolve the store set from the checkpoint files and the query against its schema; key
 *     lookups without explicit partitions go to the partitions owning the keys first;
 *  2. partitions whose store this JVM holds (local mode: all of them) answer in place;
 *  3. partitions the state store coordinator places on an executor answer in one small Spark
 *     job whose tasks prefer those executors (a task that lands elsewhere finds no store, and
 *     its partition is retried);
 *  4. the rest are not loaded by a running query: `NOT_ACTIVE` when the request requires an
 *     active store, read from checkpoint files when it allows that, else `NOT_PRESENT`.
 * Positions get their batch's source offsets from the offset log; rows stay in the store's format.
 */
private[query] object StateQueryExecutor {
  private val placementRounds = 3

  def execute(spark: SparkSession, request: StateQueryRequest): StateQueryResult = {
    val query = request.query
    lazy val hadoopConf = spark.sessionState.newHadoopConf()
    val store = request.store
    val description = StoreLocator.describe(store.checkpoint, store.operator, store.storeName, hadoopConf)
    val all = 0 until description.numPartitions
    val runId = store.runId.filter(isRunning(spark, _)).orElse(runningQueryOn(spark, description.checkpoint))
    def answer(partitions: Seq[Int]) = {
      val results = answerPartitions(spark, description, query, partitions, request, runId, hadoopConf)
      assemble(description, query, request, results, hadoopConf)
    }
    request.partitions match {
      case Some(requested) => answer(requested)
      case None =>
        // Key lookups first ask the partitions that own the keys by Spark's hash partitioning; every
        // partition only when that does not find them all (stores not placed by their whole key).
        owners(query, description) match {
          case Some(first) =>
            val routed = answer(first)
            if (foundEveryKey(routed)) routed else answer(all)
          case None => answer(all)
        }
    }
  }

  private def owners(query: StateQuery, d: StoreDescription): Option[Seq[Int]] =
    query.lookedUpKeys.map(_.map(KeyOwners.owner(_, d.schema.keySchema, d.numPartitions)).distinct.sorted)

  private def foundEveryKey(result: StateQueryResult): Boolean = {
    val answers = result.partitionResults.values.map(_.outcome).toSeq
    answers.forall(_.isRight) && (answers.flatMap(_.toOption) match {
      case values if values.isEmpty => false
      case values =>
        val found = values.map {
          case RawAnswer.Values(vs, _) => vs.map(_.isDefined)
          case _ => Seq(false)
        }
        found.transpose.forall(_.contains(true))
    })
  }

  private def answerPartitions(spark: SparkSession, description: StoreDescription, query: StateQuery,
      requested: Seq[Int], request: StateQueryRequest, runId: Option[UUID], hadoopConf: => Configuration)
      : Seq[RawPartitionResult] = {
    val (existing, missing) = requested.partition(p => p >= 0 && p < description.numPartitions)
    val resolved = QueryResolver.resolve(query, existing)

    val local = existing.flatMap(p => runId.flatMap(id => answerHere(description, p, resolved(p), request.bound, id)))
    val remote = runId.fold(Seq.empty[RawPartitionResult])(id =>
      answerOnExecutors(spark, description, existing.filterNot(p => local.exists(_.partition == p)), resolved,
        request.bound, id))
    val answered = (local ++ remote).map(r => r.partition -> r).toMap
    val unloaded = existing.filterNot(answered.contains).map(p =>
      notLoaded(description, p, resolved(p), request.bound, request.activeOnly, request.checkpointReads, runId, hadoopConf))
    val doesNotExist = missing.map(p => RawPartitionResult(p,
      Left(QueryFailure(FailureReason.DoesNotExist,
        s"store '${description.storeName}' of operator ${description.operatorId} has partitions " +
          s"0 to ${description.numPartitions - 1}, not $p")), None, "driver", 0L))
    (answered.values ++ unloaded ++ doesNotExist).toSeq
  }

  // ---- where each partition answers ---------------------------------------------------------

  private def storeId(d: StoreDescription, partition: Int): StateStoreId =
    StateStoreId(d.stateRoot, d.operatorId, partition, d.storeName)

  /** The answer of this JVM's live store for `partition`, if it holds one for run `runId`. */
  private def answerHere(d: StoreDescription, partition: Int, query: ResolvedQuery, bound: PositionBound,
      runId: UUID): Option[RawPartitionResult] =
    LiveTask(d.stateRoot, d.operatorId, partition, d.storeName, runId, query, bound).run()

  private def answerOnExecutors(spark: SparkSession, d: StoreDescription, partitions: Seq[Int],
      resolved: Map[Int, ResolvedQuery], bound: PositionBound, runId: UUID): Seq[RawPartitionResult] = {
    val here = Option(SparkEnv.get).map(_.executorId)
    var pending = partitions
    var answers = Seq.empty[RawPartitionResult]
    var round = 0
    while (pending.nonEmpty && round < placementRounds) {
      round += 1
      val placed = pending.flatMap { p =>
        TxStateSparkBridge.storeLocation(spark, storeId(d, p), runId)
          .filterNot(loc => here.exists(e => loc.endsWith("_" + e)))
          .map(loc => (LiveTask(d.stateRoot, d.operatorId, p, d.storeName, runId, resolved(p), bound), Seq(loc)))
      }
      if (placed.isEmpty) pending = Nil
      else {
        val sc = spark.sparkContext
        val previous = sc.getLocalProperty("spark.job.description")
        sc.setJobDescription(s"txstate interactive query of ${d.checkpoint} operator ${d.operatorId} store ${d.storeName}")
        val got =
          try sc.makeRDD(placed).map(_.run()).collect().toSeq.flatten
          finally sc.setJobDescription(previous)
        answers ++= got
        pending = pending.filterNot(p => got.exists(_.partition == p))
      }
    }
    answers
  }

  /**
   * The answer of a partition no running query holds: `NOT_ACTIVE` when only active stores may
   * answer, the checkpoint files' latest committed batch when they may be read, else `NOT_PRESENT`.
   * Before a running query's first commit there is no batch to read yet: `NOT_UP_TO_BOUND`.
   */
  def notLoaded(d: StoreDescription, partition: Int, query: ResolvedQuery, bound: PositionBound, activeOnly: Boolean,
      checkpointReads: Boolean, runId: Option[UUID], hadoopConf: => Configuration): RawPartitionResult = {
    val why = runId.fold("no query is running on this checkpoint")(id =>
      s"query run $id has no store for it loaded on any executor")
    def failed(reason: FailureReason, message: String) = RawPartitionResult(partition, Left(QueryFailure(reason, message)),
      None, "driver", 0L)
    if (activeOnly) {
      failed(FailureReason.NotActive, s"partition $partition: $why, and the request requires an active store")
    } else if (!checkpointReads) {
      failed(FailureReason.NotPresent, s"partition $partition: $why; allow checkpoint reads to read the latest " +
        "committed batch from the checkpoint files")
    } else {
      StoreLocator.latestCommittedBatch(d.checkpoint, hadoopConf) match {
        // A running query that has not committed its first batch is behind, not missing (as in
        // BeforeFirstCommit): a reader planned while batch 0 wrote its metadata waits for the commit.
        case None if runId.isDefined =>
          failed(FailureReason.NotUpToBound, s"partition $partition: ${BeforeFirstCommit.message(d.checkpoint)}")
        case None => failed(FailureReason.NotPresent, s"partition $partition: $why, and the checkpoint has no committed batch yet")
        case Some(batch) =>
          val id = storeId(d, partition)
          try CheckpointStores.read(id, batch + 1, hadoopConf, d.schema.codec)((codec, view) =>
            PartitionReader.read(partition, query, bound, codec, view, "checkpoint files"))
          catch {
            case NonFatal(e) => failed(FailureReason.StoreException,
              s"partition $partition: reading batch $batch from the checkpoint files under ${id.storeCheckpointLocation()} failed: $e")
          }
      }
    }
  }

  private def isRunning(spark: SparkSession, runId: UUID): Boolean = spark.streams.active.exists(_.runId == runId)

  /** The run of a query of this session running on `checkpoint` (as `LiveStores.normalize` spells it). */
  def runningQueryOn(spark: SparkSession, checkpoint: String): Option[UUID] =
    spark.streams.active.collectFirst {
      case q: StreamingQueryWrapper if LiveStores.normalize(q.streamingQuery.resolvedCheckpointRoot) == checkpoint => q.runId
    }

  // ---- the answer ---------------------------------------------------------------------------

  private[query] def assemble(d: StoreDescription, query: StateQuery, request: StateQueryRequest,
      raw: Seq[RawPartitionResult], hadoopConf: => Configuration): StateQueryResult = {
    val offsets = raw.flatMap(_.point.map(_.version - 1)).distinct
      .map(b => b -> StoreLocator.sourceOffsets(d.checkpoint, b, hadoopConf)).toMap
    def position(point: CommitPoint) =
      Position(point.version, point.checkpointId, point.commitTimeMs, offsets.getOrElse(point.version - 1, Nil))
    val pagedType = query match {
      case q: PagedQuery => Some(q.typeName)
      case _ => None
    }
    val results = raw.map { r =>
      val answer = r.outcome
      val info =
        if (!request.executionInfo) Nil
        else Seq(s"partition ${r.partition}: ${r.point.fold("no committed version read")(p => s"version ${p.version} (batch ${p.version - 1})")} " +
          f"from ${r.servedBy} in ${r.elapsedNanos / 1e6}%.3f ms")
      r.partition -> QueryResult(r.partition, answer, r.point.map(position), info)
    }.toMap
    val continuation = pagedType.flatMap { t =>
      val next = raw.flatMap(r => r.outcome.toOption.collect { case RawAnswer.Page(_, Some(key)) => r.partition -> key })
      if (next.isEmpty) None else Some(ContinuationToken(t, next.toMap).encode)
    }
    StateQueryResult(results, MergedPosition(results.flatMap { case (p, r) => r.position.map(p -> _) }), continuation)
  }
}

/**
 * One partition's query, run where its live store is: a provider of run `runId` registered in
 * this JVM. Serializable: the driver ships it to executors. None when this JVM has no such store
 * (or it is being reloaded).
 */
private[query] final case class LiveTask(stateRoot: String, operatorId: Long, partition: Int, storeName: String,
    runId: UUID, query: ResolvedQuery, bound: PositionBound) {
  def run(): Option[RawPartitionResult] = {
    val where = Option(SparkEnv.get).fold("this JVM")(e => s"executor ${e.executorId}")
    LiveStores.find(LiveStores.InstanceKey(stateRoot, operatorId, partition, storeName), runId).flatMap { provider =>
      provider.readCommittedView(LiveTask.viewWaitMs)((codec: RowCodec, view) =>
        PartitionReader.read(partition, query, bound, codec, view, s"the live store on $where"))
    }
  }
}

private object LiveTask {
  /** How long a read waits for a store that is being reloaded (a point read is far shorter). */
  val viewWaitMs = 200L
}
