package txstate.migrate

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * The child process of CheckpointLogsTest's kill test: replaces one log file with two texts in turn,
 * as fast as it can, until it is killed.
 */
object ReplaceForever {
  def main(args: Array[String]): Unit = {
    val Array(root, relative, first, second) = args
    val logs = new CheckpointLogs(new Path(root), new Configuration())
    val file = new Path(new Path(root), relative)
    logs.replace(file, first)
    println("ready")
    Iterator.from(0).foreach(i => logs.replace(file, if (i % 2 == 0) second else first))
  }
}
