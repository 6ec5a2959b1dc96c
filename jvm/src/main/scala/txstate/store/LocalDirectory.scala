package txstate.store

import java.io.File
import java.nio.channels.{FileChannel, FileLock}
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import txstate.engine.TxEngine

/**
 * Where a store instance keeps its local RocksDB, and what happens to it on close. A stable
 * directory survives (it is reused after a restart) and is held by a file lock while open; any
 * other directory is deleted. The staging area for snapshots sits beside it and always goes.
 */
final case class LocalDirectory(dir: File, stable: Boolean, lock: Option[(FileChannel, FileLock)]) {
  def stagingDir: File = new File(dir.getParentFile, dir.getName + ".staging")

  /** What goes when the instance closes, or when the JVM exits with it still open. */
  private def disposable: List[File] = if (stable) List(stagingDir) else List(stagingDir, dir)

  /** Deletes what must not outlive the instance, then releases the lock. */
  private[store] def release(): Unit =
    try {
      disposable.foreach(TxEngine.delete)
      LocalDirectory.openAtExit.remove(this)
    } finally lock.foreach { case (channel, fileLock) =>
      try fileLock.release() finally channel.close()
    }
}

object LocalDirectory {
  /**
   * A directory used once and deleted on close. If the JVM exits first (an executor stopped with
   * its stores open, as every standalone executor is when its application ends), a shutdown hook
   * deletes it: it would otherwise stay in the executor's work directory, a few MiB per store
   * instance, until someone cleans the worker by hand (docs/ARCHITECTURE.md, "Local disk").
   */
  def temporary(dir: File): LocalDirectory = {
    val local = LocalDirectory(dir, stable = false, None)
    openAtExit.put(local, ())
    exitHook
    local
  }

  private val openAtExit = new ConcurrentHashMap[LocalDirectory, Unit]()

  // Installed on the first temporary directory. Deleting a directory whose database is still open
  // is safe on POSIX file systems: the process is exiting, and open files stay readable until closed.
  private lazy val exitHook: Unit = {
    sys.addShutdownHook {
      openAtExit.keySet().forEach { local =>
        local.disposable.foreach(d => try TxEngine.delete(d) catch { case NonFatal(_) => () })
      }
    }
    ()
  }
}
