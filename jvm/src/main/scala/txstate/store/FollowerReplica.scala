package txstate.store

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.slf4j.LoggerFactory

import txstate.checkpoint.{CheckpointReader, NewerFormatException}
import txstate.engine.{CommitPoint, CommittedView, EngineOptions, TxEngine}

/** How a follower's replica reached a version: not at all, by replaying changelogs, or from a snapshot. */
sealed trait FollowStep
object FollowStep {
  case object Unchanged extends FollowStep
  final case class CaughtUp(changelogs: Int) extends FollowStep
  final case class Reanchored(changelogs: Int) extends FollowStep
}

/**
 * A read-only replica of one store instance that another application writes (KIP-813; see
 * docs/ARCHITECTURE.md, "Followers"). It owns a local engine in its own directory and reads the
 * leader's checkpoint through a [[ReadOnlyFileSystem]], so it has no way to create, rename or
 * delete anything there. It shares the load paths with the writer ([[CheckpointLoader]]) and none
 * of its writing classes.
 *
 * `advanceTo` moves it to a newer committed version: by replaying the changelogs it lacks, or,
 * when it is more than `replayLimit` versions behind and a newer snapshot exists (or when the
 * files it needs were cleaned up, or the lineage changed), by re-anchoring on the newest snapshot
 * of the version's lineage. Its engine publishes a committed view after each step and never one
 * older than it has shown, so readers' positions never go back.
 */
final class FollowerReplica private (
    local: LocalDirectory,
    checkpoint: CheckpointReader,
    engine: TxEngine,
    idsInFileNames: Boolean,
    replayLimit: Int,
    val label: String) extends AutoCloseable {
  private val log = LoggerFactory.getLogger(classOf[FollowerReplica])
  private val loader = new CheckpointLoader(engine, checkpoint, idsInFileNames, label, _ => ())
  @volatile private var closed = false

  def committed: CommitPoint = engine.committed

  /**
   * The engine's native memory as of the last step. Measured under the replica's lock only:
   * asking RocksDB while `advanceTo` replaces the database would read a closed handle.
   */
  def nativeMemoryUsed: Long = memoryAfterLastStep

  @volatile private var memoryAfterLastStep = 0L

  /** Runs `read` on the newest version this replica holds (see [[TxEngine.readCommittedView]]). */
  def readCommittedView[T](waitMs: Long)(read: CommittedView => T): Option[T] = engine.readCommittedView(waitMs)(read)

  /**
   * Makes committed `version` (with its checkpoint id under format v2) current. A version older than
   * the one held is left alone: a follower never goes back. A file of a newer format is refused with
   * `TXSTATE_FOLLOWER_NEWER_FORMAT`, naming the file and the format a release must read.
   */
  def advanceTo(version: Long, checkpointId: Option[String]): FollowStep = synchronized {
    if (closed) throw StoreErrors.closed(label)
    try step(version, checkpointId)
    catch {
      case NonFatal(e) if newerFormat(e).isDefined => throw StoreErrors.followerNeedsNewerRelease(label, newerFormat(e).get)
    } finally memoryAfterLastStep = engine.nativeMemoryUsed
  }

  private def step(version: Long, checkpointId: Option[String]): FollowStep = {
    val held = engine.committed
    if (version < held.version || (version == held.version && safely(loader.holds(held, version, checkpointId))))
      FollowStep.Unchanged
    else {
      val newerSnapshot = version - held.version > replayLimit &&
        checkpoint.snapshots().exists(s => s.version > held.version && s.version <= version)
      val replayed =
        if (newerSnapshot) None
        else try loader.catchUp(version, checkpointId)
        catch {
          case e: NewerFormatException => throw e
          case NonFatal(e) =>
            log.info(s"txstate: $label could not replay up to version $version, re-anchoring on a snapshot: $e")
            None
        }
      replayed.fold[FollowStep](FollowStep.Reanchored(reanchor(version, checkpointId)))(FollowStep.CaughtUp(_))
    }
  }

  /**
   * Restores the newest snapshot on the lineage and replays the rest. The leader's cleanup can
   * delete what a rebuild is reading: `rebuild` lists the snapshots again and retries while new
   * ones appear.
   */
  private def reanchor(version: Long, checkpointId: Option[String]): Int = loader.rebuild(version, checkpointId)

  private def newerFormat(e: Throwable): Option[NewerFormatException] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst { case n: NewerFormatException => n }

  private def safely(check: => Boolean): Boolean = try check catch { case NonFatal(_) => false }

  /** Closes the engine and deletes the local copy, once. */
  def close(): Unit = synchronized {
    if (!closed) {
      closed = true
      memoryAfterLastStep = 0L
      // What a refused flush dropped does not matter here: the local copy is deleted next.
      try engine.close() finally local.release()
    }
  }
}

object FollowerReplica {
  /**
   * Opens an empty replica in `local` of the store instance whose checkpoint files are under
   * `checkpointRoot`; the first `advanceTo` fills it.
   */
  def open(local: LocalDirectory, checkpointRoot: Path, hadoopConf: Configuration, engineOptions: EngineOptions,
      idsInFileNames: Boolean, replayLimit: Int, label: String): FollowerReplica = {
    val checkpoint = new CheckpointReader(checkpointRoot, ReadOnlyFileSystem.reads(checkpointRoot, hadoopConf))
    val engine =
      try TxEngine.open(local.dir, engineOptions)
      catch {
        case e: Throwable =>
          local.release()
          throw e
      }
    new FollowerReplica(local, checkpoint, engine, idsInFileNames, replayLimit, label)
  }
}
