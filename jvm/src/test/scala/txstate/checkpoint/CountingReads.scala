package txstate.checkpoint

import java.io.InputStream
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path, PathFilter}

import txstate.store.ReadOnlyFileSystem

/**
 * The reads of the file system under `root` (a real one), counting the LIST requests made of each
 * directory: on an object store each is a request, so tests hold readers to how many they make.
 */
final class CountingReads(root: Path, conf: Configuration) extends CheckpointReads {
  private val real = ReadOnlyFileSystem.reads(root, conf)
  private val listed = new ConcurrentHashMap[Path, AtomicInteger]()

  def open(path: Path): InputStream = real.open(path)
  def exists(path: Path): Boolean = real.exists(path)
  def list(dir: Path, filter: PathFilter): Seq[FileStatus] = {
    listed.computeIfAbsent(dir, _ => new AtomicInteger()).incrementAndGet()
    real.list(dir, filter)
  }

  /** How many times `dir` was listed so far. */
  def listsOf(dir: Path): Int = Option(listed.get(dir)).fold(0)(_.get)
}
