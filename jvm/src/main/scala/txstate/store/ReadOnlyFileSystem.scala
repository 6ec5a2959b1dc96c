package txstate.store

import java.io.InputStream

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{CreateFlag, FSDataOutputStream, FSDataOutputStreamBuilder, FileStatus, FileSystem,
  FilterFileSystem, Path, PathFilter, XAttrSetFlag}
import org.apache.hadoop.fs.permission.{AclEntry, FsPermission}
import org.apache.hadoop.util.Progressable

import txstate.checkpoint.CheckpointReads

/**
 * A view of a Hadoop file system that refuses every change: create, append, rename, delete,
 * mkdirs, copies into it, permissions, times, attributes, ACLs, snapshots. Followers read
 * checkpoints that another application owns through it (docs/ARCHITECTURE.md, "Followers"), so a
 * bug in their code can fail but never alter the leader's files. It lives in the store layer
 * because the query layer, which reads Spark's own logs of the leader, uses it too (and may not
 * import the checkpoint layer). The view is not cached by Hadoop, and closing it leaves the shared
 * instance open.
 */
final class ReadOnlyFileSystem(underlying: FileSystem) extends FilterFileSystem(underlying) {
  private def refuse(what: String, path: Path): Nothing = throw StoreErrors.readOnly(what, path)

  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int, replication: Short,
      blockSize: Long, progress: Progressable): FSDataOutputStream = refuse("create", f)
  override def create(f: Path, permission: FsPermission, flags: java.util.EnumSet[CreateFlag], bufferSize: Int,
      replication: Short, blockSize: Long, progress: Progressable, checksumOpt: org.apache.hadoop.fs.Options.ChecksumOpt)
      : FSDataOutputStream = refuse("create", f)
  override def createNonRecursive(f: Path, permission: FsPermission, flags: java.util.EnumSet[CreateFlag],
      bufferSize: Int, replication: Short, blockSize: Long, progress: Progressable): FSDataOutputStream =
    refuse("create", f)
  override def append(f: Path, bufferSize: Int, progress: Progressable): FSDataOutputStream = refuse("append to", f)
  override def rename(src: Path, dst: Path): Boolean = refuse("rename", src)
  override protected def rename(src: Path, dst: Path, options: org.apache.hadoop.fs.Options.Rename*): Unit =
    refuse("rename", src)
  override def delete(f: Path, recursive: Boolean): Boolean = refuse("delete", f)
  override def mkdirs(f: Path, permission: FsPermission): Boolean = refuse("create the directory", f)
  override def setPermission(p: Path, permission: FsPermission): Unit = refuse("change the permissions of", p)
  override def setOwner(p: Path, username: String, groupname: String): Unit = refuse("change the owner of", p)
  override def setTimes(p: Path, mtime: Long, atime: Long): Unit = refuse("change the times of", p)
  override def setReplication(src: Path, replication: Short): Boolean = refuse("change the replication of", src)
  override def truncate(f: Path, newLength: Long): Boolean = refuse("truncate", f)
  override def concat(trg: Path, psrcs: Array[Path]): Unit = refuse("concatenate into", trg)
  override def createSymlink(target: Path, link: Path, createParent: Boolean): Unit = refuse("create the link", link)
  override def copyFromLocalFile(delSrc: Boolean, overwrite: Boolean, srcs: Array[Path], dst: Path): Unit =
    refuse("copy into", dst)
  override def copyFromLocalFile(delSrc: Boolean, overwrite: Boolean, src: Path, dst: Path): Unit =
    refuse("copy into", dst)
  override def completeLocalOutput(fsOutputFile: Path, tmpLocalFile: Path): Unit = refuse("write", fsOutputFile)
  // FilterFileSystem hands these straight to the underlying file system, past the overrides above.
  override def mkdirs(f: Path): Boolean = refuse("create the directory", f)
  override def createFile(path: Path): FSDataOutputStreamBuilder[_, _] = refuse("create", path)
  override def appendFile(path: Path): FSDataOutputStreamBuilder[_, _] = refuse("append to", path)
  override def copyFromLocalFile(delSrc: Boolean, src: Path, dst: Path): Unit = refuse("copy into", dst)
  override def copyToLocalFile(delSrc: Boolean, src: Path, dst: Path): Unit =
    if (delSrc) refuse("move", src) else underlying.copyToLocalFile(false, src, dst)
  override def deleteOnExit(f: Path): Boolean = refuse("delete", f)
  override def setXAttr(path: Path, name: String, value: Array[Byte]): Unit = refuse("change the attributes of", path)
  override def setXAttr(path: Path, name: String, value: Array[Byte], flag: java.util.EnumSet[XAttrSetFlag]): Unit =
    refuse("change the attributes of", path)
  override def removeXAttr(path: Path, name: String): Unit = refuse("change the attributes of", path)
  override def setAcl(path: Path, aclSpec: java.util.List[AclEntry]): Unit = refuse("change the ACL of", path)
  override def modifyAclEntries(path: Path, aclSpec: java.util.List[AclEntry]): Unit = refuse("change the ACL of", path)
  override def removeAclEntries(path: Path, aclSpec: java.util.List[AclEntry]): Unit = refuse("change the ACL of", path)
  override def removeAcl(path: Path): Unit = refuse("change the ACL of", path)
  override def removeDefaultAcl(path: Path): Unit = refuse("change the ACL of", path)
  override def createSnapshot(path: Path, snapshotName: String): Path = refuse("snapshot", path)
  override def renameSnapshot(path: Path, snapshotOldName: String, snapshotNewName: String): Unit =
    refuse("rename a snapshot of", path)
  override def deleteSnapshot(path: Path, snapshotName: String): Unit = refuse("delete a snapshot of", path)
  override def setStoragePolicy(src: Path, policyName: String): Unit = refuse("change the storage policy of", src)
  override def unsetStoragePolicy(src: Path): Unit = refuse("change the storage policy of", src)
  override def satisfyStoragePolicy(path: Path): Unit = refuse("change the storage policy of", path)
  override def close(): Unit = () // the underlying instance is Hadoop's shared one
}

object ReadOnlyFileSystem {
  /** [[CheckpointReads]] of the file system holding `root`, through a read-only view. */
  def reads(root: Path, hadoopConf: Configuration): CheckpointReads = {
    val fs = new ReadOnlyFileSystem(root.getFileSystem(hadoopConf))
    new CheckpointReads {
      def open(path: Path): InputStream = fs.open(path)
      def list(dir: Path, filter: PathFilter): Seq[FileStatus] = fs.listStatus(dir, filter).toSeq
      def exists(path: Path): Boolean = fs.exists(path)
    }
  }
}
