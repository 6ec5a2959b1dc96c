package txstate.dfs

import java.io.{BufferedReader, File, InputStreamReader}
import java.nio.charset.StandardCharsets.UTF_8

/**
 * `MiniDfs` as its own JVM, for pytest (tests/servers/dfs_cluster.py) and `make bench-dfs`:
 *
 *   java -cp <target/dfs-classpath.txt> txstate.dfs.MiniDfsLauncher <baseDir>
 *
 * Prints `TXSTATE_DFS_READY <hdfs uri> <WebHDFS url>` once the cluster is up, then answers each
 * `counters` line on stdin with `TXSTATE_DFS_COUNTERS {"name": value, ...}`. `stop`, or the end of stdin (the parent
 * died), shuts the cluster down and exits, so a cluster never outlives the process that started it.
 */
object MiniDfsLauncher {
  def main(args: Array[String]): Unit = {
    require(args.length == 1, "usage: MiniDfsLauncher <base directory for the cluster's image and blocks>")
    val dfs = MiniDfs.start(new File(args(0)))
    try {
      say(s"TXSTATE_DFS_READY ${dfs.uri} ${dfs.webUri}")
      val in = new BufferedReader(new InputStreamReader(System.in, UTF_8))
      Iterator.continually(in.readLine()).takeWhile(line => line != null && line.trim != "stop").foreach {
        case line if line.trim == "counters" => say("TXSTATE_DFS_COUNTERS " + json(dfs.counters))
        case line if line.trim.isEmpty => ()
        case other => say(s"TXSTATE_DFS_ERROR unknown command '${other.trim}' (expected counters or stop)")
      }
    } finally dfs.close()
    // Hadoop leaves non-daemon threads behind after shutdown; the cluster is down, so leave now.
    System.exit(0)
  }

  private def say(line: String): Unit = {
    System.out.println(line)
    System.out.flush()
  }

  private def json(counters: Map[String, Long]): String =
    counters.toSeq.sortBy(_._1).map { case (k, v) => "\"" + k + "\": " + v }.mkString("{", ", ", "}")
}
