package txstate.store.stress

import java.net.URI
import java.util.Random
import java.util.concurrent.CompletableFuture
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.LockSupport

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, FSDataOutputStream, FileStatus, FilterFileSystem, Path,
  RawLocalFileSystem}
import org.apache.hadoop.fs.impl.OpenFileParameters
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable

/**
 * The local file system under the scheme `stressfs://`, pausing before every listing, open,
 * create, rename and delete for as long as the running schedule's [[Pauses]] decide: nothing,
 * a yield, or a park of up to 3 ms. The files are real; only the timing of each call moves, so
 * the store's own threads interleave their checkpoint work in ways a quiet machine rarely shows.
 *
 * A scheme of its own (not `file:`) also makes the store write through Spark's rename-based file
 * manager, as on HDFS, instead of its local one that bypasses Hadoop.
 */
final class StressFileSystem extends FilterFileSystem(new StressFileSystem.LocalUnder) {
  override def initialize(name: URI, conf: Configuration): Unit = super.initialize(StressFileSystem.uri, conf)

  private def pause(): Unit = Pauses.current.pause()

  override def listStatus(f: Path): Array[FileStatus] = { pause(); super.listStatus(f) }
  override def open(f: Path, bufferSize: Int): FSDataInputStream = { pause(); super.open(f, bufferSize) }
  // Hadoop's openFile (the store reads changelog headers through it) lands here, not in open.
  override protected def openFileWithOptions(path: Path, parameters: OpenFileParameters)
      : CompletableFuture[FSDataInputStream] = { pause(); super.openFileWithOptions(path, parameters) }
  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int, replication: Short,
      blockSize: Long, progress: Progressable): FSDataOutputStream = {
    pause()
    super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress)
  }
  override def rename(src: Path, dst: Path): Boolean = { pause(); super.rename(src, dst) }
  override def delete(f: Path, recursive: Boolean): Boolean = { pause(); super.delete(f, recursive) }
}

object StressFileSystem {
  val scheme = "stressfs"
  private val uri = URI.create(s"$scheme:///")

  /** The local file system answering to `stressfs:` paths (Hadoop checks a path's scheme against its own). */
  final class LocalUnder extends RawLocalFileSystem {
    override def getUri: URI = uri
    override def getScheme: String = scheme
  }

  /** A Hadoop configuration where `stressfs://` paths are served by a fresh [[StressFileSystem]]. */
  def configuration(): Configuration = {
    val conf = new Configuration()
    conf.set(s"fs.$scheme.impl", classOf[StressFileSystem].getName)
    // Fresh per use: the cache would hand every schedule the first instance, and close it once for all.
    conf.setBoolean(s"fs.$scheme.impl.disable.cache", true)
    conf
  }

  /** The `stressfs:` path of a local directory. */
  def pathOf(dir: java.io.File): Path = new Path(scheme, null, dir.getAbsolutePath)
}

/**
 * What one schedule's file system calls wait. Each thread draws from a Random of its own, seeded
 * with the schedule's seed and the thread's name (every actor names its thread), so a thread's
 * n-th call waits the same on every run of the seed; how the threads' calls fall against each
 * other still depends on the machine, so a seed replays the schedule's shape and decisions exactly
 * and its interleaving only likely.
 */
final class Pauses(seed: Long, quiet: Boolean = false) {
  val calls = new AtomicLong()
  private val perThread = new ThreadLocal[Random] {
    override def initialValue(): Random = new Random(seed ^ (Thread.currentThread.getName.hashCode * 0x9E3779B97F4A7C15L))
  }

  def pause(): Unit = if (!quiet) {
    calls.incrementAndGet()
    val random = perThread.get
    random.nextInt(10) match {
      case n if n < 4 => ()
      case n if n < 7 => Thread.`yield`()
      case _ => LockSupport.parkNanos(random.nextInt(3000000).toLong)
    }
  }
}

object Pauses {
  /** None between schedules: a file system call then does not wait. */
  @volatile private var running: Option[Pauses] = None
  private val none = new Pauses(0, quiet = true)

  def current: Pauses = running.getOrElse(none)

  /** Runs `body` with `pauses` deciding every call's wait. Schedules run one at a time. */
  def during[T](pauses: Pauses)(body: => T): T = {
    running = Some(pauses)
    try body finally running = None
  }
}
