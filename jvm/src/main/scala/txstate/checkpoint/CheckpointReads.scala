package txstate.checkpoint

import java.io.InputStream

import org.apache.hadoop.fs.{FileStatus, FileSystem, Path, PathFilter}
import org.apache.hadoop.util.functional.FutureIO

import txstate.compat.CheckpointFileManager

/**
 * The three things reading a checkpoint needs: open, list, test. Readers take this, not a file
 * manager, so code that only reads (followers) holds nothing that can create, rename or delete.
 */
trait CheckpointReads {
  def open(path: Path): InputStream
  def list(dir: Path, filter: PathFilter): Seq[FileStatus]
  def exists(path: Path): Boolean

  /**
   * A stream for reading no more than the first `bytes` of `path` (a changelog header). Where the
   * file system can be told so, it fetches no more: s3a's default read policy asks an object from
   * the position to its end, and a header check got a whole changelog (docs/reliability.md, "S3").
   */
  def openPrefix(path: Path, bytes: Int): InputStream = open(path)
}

object CheckpointReads {
  // Hadoop's openFile options, by value: the standard read policy, and s3a's readahead (the least
  // a random read asks for). A file system that knows neither ignores them (they are optional).
  private val readPolicy = "fs.option.openfile.read.policy"
  private val s3aReadahead = "fs.s3a.readahead.range"

  /**
   * The read side of a writer's file manager; with `fs`, the file system under it, prefixes are
   * opened through Hadoop's `openFile` with a random read policy and a readahead of the prefix.
   */
  def of(files: CheckpointFileManager, fs: Option[FileSystem] = None): CheckpointReads = new CheckpointReads {
    def open(path: Path): InputStream = files.open(path)
    def list(dir: Path, filter: PathFilter): Seq[FileStatus] = files.list(dir, filter).toSeq
    def exists(path: Path): Boolean = files.exists(path)
    override def openPrefix(path: Path, bytes: Int): InputStream = fs.fold(open(path)) { system =>
      FutureIO.awaitFuture(system.openFile(path).opt(readPolicy, "random").opt(s3aReadahead, bytes.toString).build())
    }
  }
}
