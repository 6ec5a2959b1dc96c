package txstate.checkpoint

import java.io.InputStream

import org.apache.hadoop.fs.{FileStatus, Path, PathFilter}

import txstate.compat.CheckpointFileManager

/**
 * The three things reading a checkpoint needs: open, list, test. Readers take this, not a file
 * manager, so code that only reads (followers) holds nothing that can create, rename or delete.
 */
trait CheckpointReads {
  def open(path: Path): InputStream
  def list(dir: Path, filter: PathFilter): Seq[FileStatus]
  def exists(path: Path): Boolean
}

object CheckpointReads {
  /** The read side of a writer's file manager. */
  def of(files: CheckpointFileManager): CheckpointReads = new CheckpointReads {
    def open(path: Path): InputStream = files.open(path)
    def list(dir: Path, filter: PathFilter): Seq[FileStatus] = files.list(dir, filter).toSeq
    def exists(path: Path): Boolean = files.exists(path)
  }
}
