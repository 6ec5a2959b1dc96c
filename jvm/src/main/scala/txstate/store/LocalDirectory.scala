package txstate.store

import java.io.File
import java.nio.channels.{FileChannel, FileLock}
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.apache.hadoop.util.ShutdownHookManager

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
  /** A directory used once and deleted on close. */
  def temporary(dir: File): LocalDirectory = LocalDirectory(dir, stable = false, None)

  /**
   * A directory used once, deleted on close or, if the JVM exits first, by a shutdown hook: for a
   * store whose owner never closes it at exit. Spark's executors are such owners: a standalone
   * executor exits with its stores open when its application ends, and the directory would stay in
   * the worker's work directory, until someone cleans it by hand (docs/ARCHITECTURE.md, "Local
   * disk"). Owners that close their stores in a shutdown hook of their own (queries, followers) use
   * [[temporary]]: a directory deleted under RocksDB's close makes it warn of a missing MANIFEST.
   */
  def deletedAtExit(dir: File): LocalDirectory = {
    val local = temporary(dir)
    openAtExit.put(local, ())
    exitHook
    local
  }

  private val openAtExit = new ConcurrentHashMap[LocalDirectory, Unit]()

  // Installed with the first such directory, in Hadoop's shutdown hook manager, which runs its
  // hooks one after another by priority: after Spark's (priority 40: whatever Spark still closes
  // at exit is closed before this runs) and before FileSystem's (10).
  // Deleting a directory whose database is still open is safe on POSIX file systems: the process is
  // exiting, and open files stay readable until closed.
  private lazy val exitHook: Unit = ShutdownHookManager.get().addShutdownHook(() =>
    openAtExit.keySet().forEach { local =>
      local.disposable.foreach(d => try TxEngine.delete(d) catch { case NonFatal(_) => () })
    }, exitHookPriority)

  private val exitHookPriority = 20
}
