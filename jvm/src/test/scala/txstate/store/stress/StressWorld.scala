package txstate.store.stress

import java.io.File
import java.util.concurrent.atomic.AtomicInteger

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.checkpoint.CheckpointReader
import txstate.store.{LocalDirectory, LoadRequest, ReadOnlyFileSystem, StoreInstance, StoreOptions}

/**
 * One schedule's store: its checkpoint directory (under `stressfs://`), the options every instance
 * of it opens with, the model, the checks, and fresh local directories. Instances of the store are
 * opened here, each on a local directory of its own, as Spark's providers of one store are.
 *
 * @param retain  versions every cleanup keeps loadable (Spark's minBatchesToRetain)
 * @param graceMs how old an unreferenced stored file or temporary file must be for cleanup to delete
 *                it: short, so a cleanup does delete files a concurrent upload still means to list
 *                (the race of two instances' maintenance), yet far longer than any write here takes
 *                from create to rename, so no cleanup takes a temporary file from under its writer
 */
final class StressWorld(val dir: File, val options: StoreOptions, val model: StressModel, val checks: StressChecks,
    val retain: Int = 2, val graceMs: Long = 250) {
  val conf: Configuration = StressFileSystem.configuration()
  val root: Path = StressFileSystem.pathOf(new File(dir, "checkpoint"))
  private val dirs = new AtomicInteger()

  def localDir(name: String): File = new File(dir, s"$name-${dirs.incrementAndGet()}")

  def open(local: File, label: String, stable: Boolean = true): StoreInstance =
    StoreInstance.open(LocalDirectory(local, stable, None), root, conf, options, label)

  /** A reader of the checkpoint that cannot write to it (the checks read through one). */
  def reader(): CheckpointReader = new CheckpointReader(root, ReadOnlyFileSystem.reads(root, conf))

  /** The request that loads committed `version` (its checkpoint id under format v2). */
  def at(version: Long): LoadRequest = LoadRequest.AtVersion(version, id(version))

  def id(version: Long): Option[String] = if (options.idsInFileNames) model.idOf(version) else None

  /** Compares the rows an actor saw at `version` with the model's. */
  def expectRows(check: String, version: Long, seen: Map[String, String]): Unit = {
    val expected = model.rowsAt(version)
    checks.expect(check, expected.contains(seen), s"version $version holds ${StressWorld.diff(expected, seen)}")
  }

  /**
   * Runs `load` of `version`; a failure is the store's unless cleanup was free to delete the
   * version by the time it failed (a newer version committed since, beyond what is retained).
   */
  def loading[T](check: String, version: Long)(load: => T): Option[T] =
    try Some(load)
    catch {
      case NonFatal(_) if model.mayBeCleanedUp(version, retain) =>
        checks.excuse()
        None
      case NonFatal(e) =>
        checks.fail(check, s"the load of retained version $version failed (newest committed ${model.newest})", e)
        None
    }

  /** Runs an actor's `body`; whatever it throws is the actor's failure, recorded with the seed. */
  def actor(name: String)(body: => Unit): Unit =
    try body catch { case e: Throwable => checks.fail(name, s"the actor '$name' threw", e) }
}

object StressWorld {
  private[stress] def diff(expected: Option[Map[String, String]], seen: Map[String, String]): String =
    expected.fold(s"${seen.size} rows, but the model knows no such version") { want =>
      val missing = want.filterNot { case (k, v) => seen.get(k).contains(v) }
      val extra = seen.filterNot { case (k, v) => want.get(k).contains(v) }
      s"rows differing from the model: missing or changed ${missing.take(5)}, unexpected ${extra.take(5)}"
    }
}
