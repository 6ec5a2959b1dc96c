package txstate.store

import java.io.File
import java.util.UUID

import org.slf4j.LoggerFactory

import txstate.checkpoint.{ChangelogHeader, StoreCheckpoint}
import txstate.engine.{CommitPoint, EngineOptions, Transaction, TxEngine}

/**
 * One store instance: the local transactional engine plus its checkpoint files. It makes a
 * requested version current (reuse, roll back, catch up, or rebuild) and commits transactions
 * durably (changelog first, then the atomic local write).
 *
 * Lineage: every commit gets a fresh changelog id; each changelog names the id it was built on.
 * The local commit point is trusted only if the checkpoint's changelog for that version carries
 * the same id, so a batch that was re-run elsewhere (which rewrites `<v>.txlog` under checkpoint
 * format v1) is never mistaken for ours. Under format v2 the ids are in the file names and Spark
 * names the id to load.
 *
 * Not thread-safe: the provider lets one task at a time use it.
 */
final class StoreInstance(
    localDir: File,
    val checkpoint: StoreCheckpoint,
    engineOptions: EngineOptions,
    idsInFileNames: Boolean,
    describe: String) extends AutoCloseable {

  private val log = LoggerFactory.getLogger(classOf[StoreInstance])
  private val engine = TxEngine.open(localDir, engineOptions)

  def committed: CommitPoint = engine.committed
  def nativeMemoryUsed: Long = engine.nativeMemoryUsed

  /**
   * Makes `version` current. `checkpointId` is the id Spark names under checkpoint format v2;
   * under v1 it is None and the checkpoint's own `<version>.txlog` decides.
   */
  def load(version: Long, checkpointId: Option[String]): LoadReport = {
    require(version >= 0, s"txstate: cannot load negative version $version of $describe")
    val start = System.nanoTime()
    val local = engine.committed
    val (path, replayed) =
      if (engine.inFlight.isEmpty && local.version == version && holds(local, version, checkpointId)) {
        (LoadPath.Reused, 0)
      } else if (engine.inFlight.isEmpty && rollbackTargetMatches(version, checkpointId)) {
        engine.rollbackLastCommit()
        (LoadPath.RolledBack, 0)
      } else {
        catchUp(local, version, checkpointId) match {
          case Some(n) => (LoadPath.CaughtUp, n)
          case None => (LoadPath.Rebuilt, rebuild(version, checkpointId))
        }
      }
    val report = LoadReport(version, path, replayed, (System.nanoTime() - start) / 1000000)
    if (path != LoadPath.Reused) log.info(s"txstate: loaded version $version of $describe: $report")
    report
  }

  /** Makes an empty store current at `version`; its next commit starts a new lineage. */
  def loadEmpty(version: Long): LoadReport = {
    val start = System.nanoTime()
    engine.startEmptyAt(version)
    LoadReport(version, LoadPath.Rebuilt, 0, (System.nanoTime() - start) / 1000000)
  }

  def begin(): Transaction = engine.begin()

  /** Makes the transaction durable as version `base + 1`: changelog on the checkpoint, then the local commit. */
  def commit(tx: Transaction): CommitReport = {
    val start = System.nanoTime()
    val newVersion = tx.base.version + 1
    val id = UUID.randomUUID().toString
    val now = System.currentTimeMillis()
    val header = ChangelogHeader(newVersion, id, tx.base.checkpointId, tx.numKeys, now)
    val bytes = checkpoint.writeChangelog(header, fileId(id), tx.changes)
    engine.commit(tx, CommitPoint(newVersion, Some(id), CommitPoint.currentFormatVersion, now, tx.numKeys))
    CommitReport(newVersion, bytes, (System.nanoTime() - start) / 1000000)
  }

  def close(): Unit = engine.close()

  private def fileId(id: String): Option[String] = if (idsInFileNames) Some(id) else None

  /** True when the local commit point `p` is exactly `version` on the requested lineage. */
  private def holds(p: CommitPoint, version: Long, checkpointId: Option[String]): Boolean =
    if (version == 0) p.version == 0
    else p.checkpointId == Some(topChangelogId(version, checkpointId))

  private def rollbackTargetMatches(version: Long, checkpointId: Option[String]): Boolean =
    engine.committedBeforeLastCommit.exists(holds(_, version, checkpointId))

  /** The changelog id of `version` on the requested lineage. */
  private def topChangelogId(version: Long, checkpointId: Option[String]): String =
    if (idsInFileNames) checkpointId.getOrElse(missingId(version))
    else checkpoint.readChangelogHeader(version, None).changelogId

  private def missingId(version: Long): Nothing =
    throw new IllegalStateException(
      s"txstate: Spark asked for version $version of $describe under checkpoint format v2 without a checkpoint id")

  /**
   * Walks changelog headers down from `version` until level `stopAt` or the root of the chain (a
   * changelog built on an empty store). Returns the headers oldest first, the level where the walk
   * stopped and the changelog id that level must hold; None when a link is broken (a changelog
   * does not carry the id its successor names).
   */
  private def walkDown(version: Long, checkpointId: Option[String], stopAt: Long): Option[(List[ChangelogHeader], Long, Option[String])] = {
    if (idsInFileNames && version > 0 && checkpointId.isEmpty) missingId(version)
    var chain = List.empty[ChangelogHeader]
    var level = version
    var expected = checkpointId
    var broken = false
    var rooted = false
    while (level > stopAt && !rooted && !broken) {
      val header = checkpoint.readChangelogHeader(level, if (idsInFileNames) expected else None)
      if (header.version != level) {
        throw new IllegalStateException(
          s"txstate: changelog ${checkpoint.changelogPath(level, fileIdOf(expected))} of $describe says it is " +
            s"version ${header.version}, not $level")
      }
      if (expected.exists(_ != header.changelogId)) broken = true
      else {
        chain ::= header
        expected = header.baseChangelogId
        level -= 1
        rooted = expected.isEmpty
      }
    }
    if (broken) None else Some((chain, level, expected))
  }

  private def fileIdOf(id: Option[String]): Option[String] = if (idsInFileNames) id else None

  /** Replays only the missing changelogs when the local database is behind on the same lineage. */
  private def catchUp(local: CommitPoint, version: Long, checkpointId: Option[String]): Option[Int] =
    if (engine.inFlight.isDefined || local.version >= version) None
    else walkDown(version, checkpointId, local.version).collect {
      case (chain, level, expected) if level == local.version && expected == local.checkpointId => replay(chain)
    }

  /** Drops the local database and replays the whole chain from its root. */
  private def rebuild(version: Long, checkpointId: Option[String]): Int = {
    engine.wipe()
    walkDown(version, checkpointId, 0L) match {
      case Some((chain, _, None)) => replay(chain)
      case _ =>
        throw new IllegalStateException(
          s"txstate: cannot rebuild version $version of $describe: its changelogs under ${checkpoint.root} do " +
            "not form one chain back to an empty store. The checkpoint is damaged or mixes files of two queries.")
    }
  }

  private def replay(chain: List[ChangelogHeader]): Int = {
    chain.foreach { h =>
      val changelog = checkpoint.readChangelog(h.version, fileId(h.changelogId))
      engine.replay(changelog.records,
        CommitPoint(h.version, Some(h.changelogId), CommitPoint.currentFormatVersion, h.commitTimeMs, h.numKeys))
    }
    chain.size
  }
}
