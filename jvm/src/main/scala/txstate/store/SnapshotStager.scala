package txstate.store

import java.io.File
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicReference

import org.slf4j.LoggerFactory

import txstate.checkpoint.{SnapshotFile, SnapshotManifest, StoreCheckpoint}
import txstate.engine.{CommitPoint, TxEngine}

/**
 * Snapshots in two steps, so the commit path only pays for a local RocksDB checkpoint (a flush
 * and hard links): `stage` at commit time, `upload` later on Spark's maintenance thread.
 *
 * SST files never change once written, so an SST already uploaded for the same local database
 * incarnation is referenced again instead of copied: snapshots share files. Only while it is still
 * there: another instance of the store (the provider of a query's previous run, which Spark unloads
 * after maintenance) may have cleaned up the snapshot this one was restored from, and with it the
 * files no snapshot of its own lists. So an upload that would reuse files lists the stored files
 * once, and copies again what is gone (docs/ARCHITECTURE.md, "Files in a checkpoint").
 */
private[store] final class SnapshotStager(stagingRoot: File, checkpoint: StoreCheckpoint) {
  private val log = LoggerFactory.getLogger(classOf[SnapshotStager])
  private final case class Staged(point: CommitPoint, dir: File, incarnation: String)

  private val pending = new AtomicReference[Option[Staged]](None)
  // (incarnation, RocksDB file name, size) -> stored file, for files this instance has uploaded.
  private val uploaded = new ConcurrentHashMap[(String, String, Long), SnapshotFile]()

  def stage(engine: TxEngine): Unit = {
    val target = new File(stagingRoot, s"${engine.committed.version}-${UUID.randomUUID()}")
    stagingRoot.mkdirs()
    val point =
      try engine.checkpointTo(target)
      catch {
        case e: Throwable =>
          TxEngine.delete(target) // a partial checkpoint (a full disk) must not hold on to its space
          throw e
      }
    pending.getAndSet(Some(Staged(point, target, engine.incarnation))).foreach(old => TxEngine.delete(old.dir))
  }

  /** Remembers the files of a snapshot restored into a fresh incarnation, so they are not uploaded again. */
  def adopt(incarnation: String, manifest: SnapshotManifest): Unit =
    manifest.files.filter(_.localName.endsWith(".sst")).foreach { f =>
      uploaded.put((incarnation, f.localName, f.size), f)
    }

  /** Uploads the newest staged snapshot, if any. Safe to call from a maintenance thread. */
  def upload(): Option[(SnapshotManifest, SnapshotReport)] = pending.getAndSet(None).map { staged =>
    val start = System.nanoTime()
    try {
      var copied = 0L
      var reused = 0L
      var gone = 0
      // Listed only when some file would be reused; one listing for the whole snapshot.
      lazy val stored: Set[String] = checkpoint.storedFiles().map(_.getPath.getName).toSet
      def stillStored(file: SnapshotFile): Boolean = stored.contains(file.storedName) || { gone += 1; false }
      val files = Option(staged.dir.listFiles()).toSeq.flatten.filter(_.isFile).sortBy(_.getName).map { local =>
        val key = (staged.incarnation, local.getName, local.length())
        Option(uploaded.get(key)).filter(_ => local.getName.endsWith(".sst")).filter(stillStored) match {
          case Some(existing) =>
            reused += existing.size
            existing
          case None =>
            val storedName = s"${UUID.randomUUID()}-${local.getName}"
            val (size, crc) = checkpoint.upload(local, storedName)
            copied += size
            val file = SnapshotFile(local.getName, storedName, size, crc)
            if (local.getName.endsWith(".sst")) uploaded.put(key, file)
            file
        }
      }
      if (gone > 0) {
        log.warn(s"txstate: $gone stored files of the snapshot of version ${staged.point.version} were deleted since " +
          s"this instance uploaded or restored them (a cleanup by another instance of the store), and were copied again")
      }
      val id = staged.point.checkpointId.getOrElse(throw StoreErrors.stagedSnapshotWithoutId(staged.point.version))
      val manifest = SnapshotManifest(staged.point.version, id, staged.point.numKeys, staged.point.commitTimeMs, files)
      checkpoint.writeManifest(manifest)
      (manifest, SnapshotReport(manifest.version, copied, reused, files.size, (System.nanoTime() - start) / 1000000))
    } finally TxEngine.delete(staged.dir)
  }

  def close(): Unit = {
    pending.getAndSet(None).foreach(s => TxEngine.delete(s.dir))
    TxEngine.delete(stagingRoot)
  }
}
