package txstate.store

import java.io.File
import java.nio.channels.{FileChannel, FileLock}

import txstate.engine.TxEngine

/**
 * Where a store instance keeps its local RocksDB, and what happens to it on close. A stable
 * directory survives (it is reused after a restart) and is held by a file lock while open; any
 * other directory is deleted. The staging area for snapshots sits beside it and always goes.
 */
final case class LocalDirectory(dir: File, stable: Boolean, lock: Option[(FileChannel, FileLock)]) {
  def stagingDir: File = new File(dir.getParentFile, dir.getName + ".staging")

  /** Deletes what must not outlive the instance, then releases the lock. */
  private[store] def release(): Unit =
    try {
      TxEngine.delete(stagingDir)
      if (!stable) TxEngine.delete(dir)
    } finally lock.foreach { case (channel, fileLock) =>
      try fileLock.release() finally channel.close()
    }
}

object LocalDirectory {
  /** A directory used once and deleted on close. */
  def temporary(dir: File): LocalDirectory = LocalDirectory(dir, stable = false, None)
}
