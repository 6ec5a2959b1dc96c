package txstate.dfs

import java.io.File
import java.lang.management.ManagementFactory
import javax.management.ObjectName

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.hdfs.MiniDFSCluster
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem

/**
 * A real HDFS on loopback: one NameNode and one DataNode (Hadoop's MiniDFSCluster), storing its
 * blocks and image under `baseDir`. The single owner of the cluster: `close` shuts it down once.
 * Used in-process by the Scala tests and, through `MiniDfsLauncher`, as its own JVM by pytest and
 * `make bench-dfs` (docs/reliability.md, "Distributed file systems").
 */
final class MiniDfs private (cluster: MiniDFSCluster) extends AutoCloseable {
  private var closed = false

  /** The file system's root, `hdfs://127.0.0.1:<port>` (no trailing slash). */
  val uri: String = s"hdfs://127.0.0.1:${cluster.getNameNodePort}"

  /** The NameNode's web server, `http://127.0.0.1:<port>`: WebHDFS, for the Python tests' listings. */
  val webUri: String = s"http://127.0.0.1:${cluster.getNameNode.getHttpAddress.getPort}"

  /** A client configuration that reaches this cluster. */
  def conf: Configuration = {
    val c = new Configuration()
    c.set("fs.defaultFS", uri)
    c
  }

  /**
   * The cluster's request and byte counters, read fresh from Hadoop's metrics sources (the same
   * counters the NameNode and DataNode publish over JMX, without JMX's cache): every `*NumOps` of
   * the NameNode's client RPC port (`Create`, `GetFileInfo`, `Rename`, ...), the NameNode's activity
   * counters (`FilesCreated`, `FilesRenamed`, ...), and the DataNode's `BytesWritten`/`BytesRead`.
   */
  def counters: Map[String, Long] = {
    val rpc = read(s"RpcDetailedActivityForPort${cluster.getNameNodePort}")
      .collect { case (name, v) if isCallCount(name) => "rpc." + name.stripSuffix("NumOps") -> v }
    val nn = read("NameNodeActivity").map { case (name, v) => "nn." + name -> v }
    val dn = dataNodeSources.flatMap(read).collect {
      case (name @ ("BytesWritten" | "BytesRead" | "BlocksWritten" | "BlocksRead"), v) => "dn." + name -> v
    }.groupMapReduce(_._1)(_._2)(_ + _)
    rpc ++ nn ++ dn
  }

  /** `<Method>NumOps`: calls served; not `Overall<Method>NumOps` (the same, again) nor `Deferred...`. */
  private def isCallCount(name: String): Boolean =
    name.endsWith("NumOps") && !name.startsWith("Overall") && !name.startsWith("Deferred") && !name.contains("(")

  private def dataNodeSources: Seq[String] =
    ManagementFactory.getPlatformMBeanServer.queryNames(new ObjectName("Hadoop:service=DataNode,*"), null)
      .asScala.toSeq.map(_.getKeyProperty("name")).filter(_.startsWith("DataNodeActivity"))

  /** Every numeric metric of one metrics source, sampled now. */
  private def read(source: String): Map[String, Long] =
    Option(DefaultMetricsSystem.instance().getSource(source)).toSeq.flatMap { src =>
      val collector = new MetricsCollectorImpl
      src.getMetrics(collector, true)
      collector.getRecords.asScala.flatMap(_.metrics().asScala).collect {
        case m if m.value().isInstanceOf[java.lang.Long] || m.value().isInstanceOf[java.lang.Integer] =>
          m.name() -> m.value().longValue()
      }
    }.toMap

  override def close(): Unit = synchronized {
    if (!closed) {
      closed = true
      cluster.shutdown(true)
    }
  }
}

object MiniDfs {
  /** Starts a NameNode and one DataNode on 127.0.0.1 (ephemeral ports) over a fresh `baseDir`. */
  def start(baseDir: File): MiniDfs = {
    val conf = new Configuration()
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, baseDir.getAbsolutePath)
    // Loopback only, on ports the system picks.
    conf.set("dfs.namenode.rpc-address", "127.0.0.1:0")
    conf.set("dfs.namenode.http-address", "127.0.0.1:0")
    conf.set("dfs.datanode.address", "127.0.0.1:0")
    conf.set("dfs.datanode.http.address", "127.0.0.1:0")
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0")
    // One DataNode: one replica, and no waiting for a second that will never come.
    conf.setInt("dfs.replication", 1)
    val cluster = new MiniDFSCluster.Builder(conf, baseDir).numDataNodes(1).format(true).build()
    try {
      cluster.waitActive()
      new MiniDfs(cluster)
    } catch {
      case e: Throwable =>
        cluster.shutdown(true)
        throw e
    }
  }
}
