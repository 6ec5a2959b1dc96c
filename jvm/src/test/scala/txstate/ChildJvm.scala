package txstate

import java.io.{BufferedReader, File, InputStreamReader}
import java.net.URLClassLoader
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.TimeUnit

/**
 * A `main` of the test classes run in a real child JVM, so a test can SIGKILL it mid-write the way a
 * crashed driver or command line dies. sbt runs tests in its own JVM, whose `java.class.path` is
 * sbt's launcher: the child's class path is read from the class loaders that loaded the tests.
 */
object ChildJvm {
  def classPath: String = {
    val fromLoaders = Iterator.iterate(getClass.getClassLoader)(_.getParent).takeWhile(_ != null)
      .collect { case urls: URLClassLoader => urls.getURLs.toSeq }.flatten
      .map(u => new File(u.toURI).getPath).toVector.distinct
    (fromLoaders :+ System.getProperty("java.class.path")).mkString(File.pathSeparator)
  }

  /** Starts `mainClass` with `args`; its output and errors come back on one stream. */
  def start(mainClass: String, args: String*): Process = {
    val java = new File(System.getProperty("java.home"), "bin/java").getPath
    new ProcessBuilder((Seq(java, "-Xmx256m", "-cp", classPath, mainClass) ++ args): _*).redirectErrorStream(true).start()
  }

  /**
   * Waits for the child to print `line` (it does when it has started the work it is to be killed
   * in); fails with everything it printed instead if it ends first.
   */
  def awaitLine(process: Process, line: String): Unit = {
    val out = new BufferedReader(new InputStreamReader(process.getInputStream, UTF_8))
    val before = Iterator.continually(out.readLine()).takeWhile(l => l != null && l != line).toVector
    require(process.isAlive, s"the child JVM ended before printing '$line':\n${before.mkString("\n")}")
  }

  def kill(process: Process): Unit = {
    process.destroyForcibly() // SIGKILL: no shutdown hook, no finally
    require(process.waitFor(30, TimeUnit.SECONDS), "the child JVM did not die")
  }
}
