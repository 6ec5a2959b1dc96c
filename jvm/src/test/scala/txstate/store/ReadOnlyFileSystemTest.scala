package txstate.store

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{AccessDeniedException, Files}
import java.util.Collections

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{CreateFlag, FileSystem, Path, PathFilter}
import org.apache.hadoop.fs.permission.FsPermission
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.compat.ScalaLibrary.CollectionConverters._

final class ReadOnlyFileSystemTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)

  /** A directory with two files and a subdirectory, written without Hadoop (so no `.crc` sidecars). */
  private def newTree(): File = {
    val dir = newTempDir("tree")
    Files.write(new File(dir, "1.txlog").toPath, b("one"))
    Files.write(new File(dir, "2.txlog").toPath, b("two"))
    Files.createDirectories(new File(dir, "sst").toPath)
    Files.write(new File(dir, "sst/a.sst").toPath, b("stored"))
    dir
  }

  /** Every name under `dir` with its bytes (directories as empty), to prove nothing changed. */
  private def tree(dir: File): Map[String, Seq[Byte]] = {
    val paths = Files.walk(dir.toPath)
    try paths.iterator().asScala.map { p =>
      dir.toPath.relativize(p).toString -> (if (Files.isDirectory(p)) Seq.empty[Byte] else Files.readAllBytes(p).toSeq)
    }.toMap
    finally paths.close()
  }

  /** A `file:` path (from a string, so a directory's has no trailing slash either). */
  private def path(dir: File, name: String): Path = new Path(new File(dir, name).toURI.toString)

  private def readOnly(dir: File): ReadOnlyFileSystem =
    new ReadOnlyFileSystem(path(dir, "").getFileSystem(new Configuration()))

  test("reads through the read-only view see the files: open, list, exists, getFileStatus") {
    val dir = newTree()
    val fs = readOnly(dir)
    val in = fs.open(path(dir, "1.txlog"))
    try assert(new String(txstate.compat.JavaLibrary.readAllBytes(in), UTF_8) == "one") finally in.close()
    assert(fs.listStatus(path(dir, "")).map(_.getPath.getName).toSet == Set("1.txlog", "2.txlog", "sst"))
    assert(fs.exists(path(dir, "sst/a.sst")))
    assert(!fs.exists(path(dir, "3.txlog")))
    val status = fs.getFileStatus(path(dir, "2.txlog"))
    assert(status.isFile && status.getLen == 3)
    assert(fs.getFileStatus(path(dir, "sst")).isDirectory)
    val copy = new File(newTempDir("copy"), "1.txlog")
    fs.copyToLocalFile(false, path(dir, "1.txlog"), new Path(copy.toURI))
    assert(new String(Files.readAllBytes(copy.toPath), UTF_8) == "one", "copying out is a read")
  }

  test("every change through the read-only view is refused with TXSTATE_READ_ONLY naming the path, and nothing changes") {
    val dir = newTree()
    val before = tree(dir)
    val fs = readOnly(dir)
    val existing = path(dir, "1.txlog")
    val fresh = path(dir, "3.txlog")
    val local = path(newTempDir("local"), "copy")
    val localSource = new File(newTempDir("source"), "x")
    Files.write(localSource.toPath, b("local"))
    val attempts = Seq[(String, Path, () => Any)](
      ("create", fresh, () => fs.create(fresh)),
      ("create overwriting", existing, () => fs.create(existing, true)),
      ("create with permission", fresh, () => FileSystem.create(fs, fresh, FsPermission.getFileDefault)),
      ("create with buffer", fresh, () => fs.create(fresh, true, 4096)),
      ("create with flags", fresh, () => fs.create(fresh, FsPermission.getFileDefault,
        java.util.EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE), 4096, 1.toShort, 1024L * 1024, null)),
      ("createNonRecursive", fresh, () => fs.createNonRecursive(fresh, true, 4096, 1.toShort, 1024L * 1024, null)),
      ("createNewFile", fresh, () => fs.createNewFile(fresh)),
      ("createFile builder", fresh, () => fs.createFile(fresh).build()),
      ("append", existing, () => fs.append(existing)),
      ("appendFile builder", existing, () => fs.appendFile(existing).build()),
      ("rename", existing, () => fs.rename(existing, fresh)),
      ("delete", existing, () => fs.delete(existing, false)),
      ("delete a directory", path(dir, "sst"), () => fs.delete(path(dir, "sst"), true)),
      ("deleteOnExit", existing, () => fs.deleteOnExit(existing)),
      ("mkdirs", path(dir, "new"), () => fs.mkdirs(path(dir, "new"))),
      ("mkdirs with permission", path(dir, "new"), () => fs.mkdirs(path(dir, "new"), FsPermission.getDirDefault)),
      ("setPermission", existing, () => fs.setPermission(existing, new FsPermission("777"))),
      ("setOwner", existing, () => fs.setOwner(existing, "nobody", "nobody")),
      ("setTimes", existing, () => fs.setTimes(existing, 0L, 0L)),
      ("setReplication", existing, () => fs.setReplication(existing, 3.toShort)),
      ("truncate", existing, () => fs.truncate(existing, 1L)),
      ("concat", existing, () => fs.concat(existing, Array(path(dir, "2.txlog")))),
      ("createSymlink", fresh, () => fs.createSymlink(existing, fresh, false)),
      ("createSnapshot", path(dir, "sst"), () => fs.createSnapshot(path(dir, "sst"), "s")),
      ("setStoragePolicy", existing, () => fs.setStoragePolicy(existing, "COLD")),
      ("setXAttr", existing, () => fs.setXAttr(existing, "user.x", b("v"))),
      ("removeXAttr", existing, () => fs.removeXAttr(existing, "user.x")),
      ("setAcl", existing, () => fs.setAcl(existing, Collections.emptyList())),
      ("removeAcl", existing, () => fs.removeAcl(existing)),
      ("copyFromLocalFile", fresh, () => fs.copyFromLocalFile(new Path(localSource.toURI), fresh)),
      ("moveFromLocalFile", fresh, () => fs.moveFromLocalFile(new Path(localSource.toURI), fresh)),
      ("copyToLocalFile deleting the source", existing, () => fs.copyToLocalFile(true, existing, local)),
      ("moveToLocalFile", existing, () => fs.moveToLocalFile(existing, local)))
    val notRefused = attempts.flatMap { case (name, target, attempt) =>
      try { attempt(); Some(s"$name: allowed") }
      catch {
        case e: AccessDeniedException if e.getMessage.contains("[TXSTATE_READ_ONLY]") && e.getMessage.contains(target.toString) =>
          None
        case e: Exception => Some(s"$name: $e")
      }
    }
    assert(notRefused.isEmpty, notRefused.mkString("not refused as read-only:\n", "\n", ""))
    assert(tree(dir) == before, "the read-only view changed the file system")
    assert(localSource.isFile, "a refused move must not delete the local source")
    fs.close()
    assert(path(dir, "").getFileSystem(new Configuration()).exists(existing), "closing the view leaves the shared instance usable")
  }

  test("ReadOnlyFileSystem.reads gives checkpoint reads that open, list and test files") {
    val dir = newTree()
    val before = tree(dir)
    val reads = ReadOnlyFileSystem.reads(path(dir, ""), new Configuration())
    val in = reads.open(path(dir, "2.txlog"))
    try assert(new String(txstate.compat.JavaLibrary.readAllBytes(in), UTF_8) == "two") finally in.close()
    val logs: PathFilter = p => p.getName.endsWith(".txlog")
    assert(reads.list(path(dir, ""), logs).map(_.getPath.getName).toSet == Set("1.txlog", "2.txlog"))
    assert(reads.exists(path(dir, "sst/a.sst")) && !reads.exists(path(dir, "9.txlog")))
    assert(tree(dir) == before)
  }
}
