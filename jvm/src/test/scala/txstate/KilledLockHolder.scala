package txstate

import java.io.{BufferedReader, File, InputStreamReader}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.TimeUnit

/**
 * A real process that takes the POSIX record lock (fcntl) on `file`, the kind RocksDB's LOCK and the
 * JVM's FileChannel locks are, and is then killed with SIGKILL: what a crashed executor leaves
 * behind. `whileHeld` runs while the other process still holds the lock.
 */
object KilledLockHolder {
  def lockThenKill[A](file: File)(whileHeld: => A): A = {
    val script = "import fcntl, sys, time\n" +
      "f = open(sys.argv[1], 'a')\n" +
      "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n" +
      "print('locked', flush=True)\n" +
      "time.sleep(120)\n"
    val process = new ProcessBuilder("python3", "-c", script, file.getAbsolutePath).redirectErrorStream(true).start()
    try {
      val out = new BufferedReader(new InputStreamReader(process.getInputStream, UTF_8))
      val first = out.readLine()
      require(first == "locked", s"the lock holder could not lock $file: $first")
      whileHeld
    } finally {
      process.destroyForcibly() // SIGKILL: the holder gets no chance to unlock or delete anything
      require(process.waitFor(30, TimeUnit.SECONDS), "the lock holder did not die")
    }
  }
}
