package txstate

import java.io.File
import java.nio.file.{Files, Path}
import java.util.Comparator

import org.scalatest.{BeforeAndAfterAll, Suite}

/** Real directories for a suite's databases and checkpoints, deleted when the suite ends. */
trait TempDirectories extends BeforeAndAfterAll { this: Suite =>
  /** Where the suite's directories go; None = the JVM's temp directory. */
  protected def tempParent: Option[Path] = None

  private lazy val suiteRoot: File = {
    val prefix = s"txstate-${getClass.getSimpleName}-"
    tempParent.fold(Files.createTempDirectory(prefix))(Files.createTempDirectory(_, prefix)).toFile
  }

  /** A fresh, existing directory. */
  def newTempDir(name: String = "dir"): File = Files.createTempDirectory(suiteRoot.toPath, s"$name-").toFile

  /** A path inside a fresh directory that does not exist yet (RocksDB and the checkpoint create it). */
  def newTempPath(name: String = "path"): File = new File(newTempDir(name), name)

  override def afterAll(): Unit =
    try TempDirectories.deleteRecursively(suiteRoot.toPath)
    finally super.afterAll()
}

object TempDirectories {
  def deleteRecursively(path: Path): Unit = if (Files.exists(path)) {
    val paths = Files.walk(path)
    try paths.sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.deleteIfExists(p))
    finally paths.close()
  }
}
