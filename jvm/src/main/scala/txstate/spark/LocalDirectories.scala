package txstate.spark

import java.io.File
import java.nio.channels.{FileChannel, FileLock, OverlappingFileLockException}
import java.nio.file.StandardOpenOption.{CREATE, WRITE}
import java.security.MessageDigest
import java.util.UUID

import org.apache.spark.{SparkEnv, SparkFiles}
import org.apache.spark.sql.execution.streaming.state.StateStoreId

import txstate.store.LocalDirectory

/**
 * Where a provider keeps its local RocksDB. With `txstate.localDir` set, each store instance gets
 * a stable directory (named after its checkpoint location) that survives restarts and is reused
 * when its commit point is on the requested lineage; a file lock keeps two providers (in this JVM
 * or another process on the host) out of the same one. Otherwise each provider gets a fresh
 * directory, deleted on close (or at exit). The store instance owns what is claimed here and releases it.
 */
private[spark] object LocalDirectories {
  def claim(configured: Option[String], storeId: StateStoreId): LocalDirectory = {
    val instanceName = s"op${storeId.operatorId}-part${storeId.partitionId}-${storeId.storeName}"
    configured match {
      case Some(root) =>
        val parent = ensureDir(new File(new File(root, "txstate"), checkpointHash(storeId)), root)
        val dir = new File(parent, instanceName)
        tryLock(new File(parent, instanceName + ".lock")) match {
          case Some(lock) => LocalDirectory(dir, stable = true, Some(lock))
          case None => LocalDirectory.deletedAtExit(new File(parent, s"$instanceName-${UUID.randomUUID()}"))
        }
      case None =>
        val root = executorFilesRoot.getOrElse(new File(System.getProperty("java.io.tmpdir")))
        val parent = ensureDir(new File(root, "txstate"), root.getPath)
        LocalDirectory.deletedAtExit(new File(parent, s"$instanceName-${UUID.randomUUID()}"))
    }
  }

  /**
   * An executor's own files directory, inside its container's work directory, where a cluster
   * manager cleans up after it. Not on the driver (local mode): a stopping SparkContext deletes the
   * driver's files directory before Spark closes its state stores, and a store still flushing into
   * it would fail; the temporary directory outlives the context, and the store deletes its own.
   */
  private def executorFilesRoot: Option[File] =
    Option(SparkEnv.get).filter(_.executorId != DriverExecutorId).map(_ => new File(SparkFiles.getRootDirectory()))

  /** The executor id Spark gives the driver (its own constant is private to Spark). */
  private val DriverExecutorId = "driver"

  private def checkpointHash(storeId: StateStoreId): String = {
    val digest = MessageDigest.getInstance("SHA-256").digest(storeId.checkpointRootLocation.getBytes("UTF-8"))
    digest.take(8).map(b => f"$b%02x").mkString
  }

  private def ensureDir(dir: File, configured: String): File = {
    if (!dir.isDirectory && !dir.mkdirs() && !dir.isDirectory) {
      throw TxStateErrors.badSetting(TxStateConf.prefix + "localDir", s"names $configured, where $dir cannot be created")
    }
    dir
  }

  private def tryLock(file: File): Option[(FileChannel, FileLock)] = {
    val channel = FileChannel.open(file.toPath, CREATE, WRITE)
    val lock = try Option(channel.tryLock()) catch { case _: OverlappingFileLockException => None }
    if (lock.isEmpty) channel.close()
    lock.map(l => (channel, l))
  }
}
