package txstate.store

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

import txstate.checkpoint.{CheckpointEntry, StoreCheckpoint}

/**
 * Deletes the checkpoint files that no retained version needs.
 *
 * (Everything strictly below the anchor snapshot goes; the anchor version's changelog stays.)
 *
 * The oldest version to keep loadable is `latest - minVersionsToRetain + 1`. Files can go only
 * below a snapshot at or under that version that is certainly on the live lineage: under format v1
 * the snapshot's id must equal the id in that version's changelog (re-runs rewrite the changelog,
 * so it names the surviving attempt); under format v2 every attempt of that version must have a
 * snapshot. Below it: changelogs, older manifests, and stored files no remaining manifest
 * references. A stored file younger than the grace period is kept even when unreferenced, since
 * an upload writes its files before its manifest (possibly from a stale instance elsewhere).
 * Temporary files older than the grace period, left by writers killed before their rename, go too.
 *
 * Before it deletes a version's files, a round has `recordRetention` record the retention it deletes
 * under (once per instance, see `StoreInstance.cleanup`), so a reader of the checkpoint can tell the
 * versions it deleted from lost ones: the record is written first, so no deleted version is ever
 * left unexplained by a failure in between.
 */
private[store] object Cleanup {
  private val log = LoggerFactory.getLogger(getClass)

  def run(checkpoint: StoreCheckpoint, idsInFileNames: Boolean, minVersionsToRetain: Int, graceMs: Long,
      store: String, recordRetention: Int => Unit): Unit = {
    val stale = checkpoint.staleTemporaryFiles(System.currentTimeMillis() - graceMs)
    stale.foreach(checkpoint.delete)
    if (stale.nonEmpty) log.info(s"txstate: deleted ${stale.size} temporary files that killed writers left in $store")
    val changelogs = checkpoint.changelogs()
    if (changelogs.nonEmpty) {
      val retained = math.max(minVersionsToRetain, 1)
      val oldestToKeep = changelogs.map(_.version).max - retained + 1
      val snapshots = checkpoint.snapshots()
      val anchor = snapshots.map(_.version).distinct.filter(_ <= oldestToKeep).sorted.reverse
        .find(v => onLiveLineage(checkpoint, idsInFileNames, v, changelogs, snapshots, store))
      anchor.foreach(v => deleteBelow(checkpoint, v, changelogs, snapshots, graceMs, store, () => recordRetention(retained)))
    }
  }

  private def onLiveLineage(checkpoint: StoreCheckpoint, idsInFileNames: Boolean, version: Long,
      changelogs: Seq[CheckpointEntry], snapshots: Seq[CheckpointEntry], store: String): Boolean = {
    val snapshotIds = snapshots.filter(_.version == version).flatMap(_.id).toSet
    try {
      if (idsInFileNames) {
        val attempts = changelogs.filter(_.version == version).flatMap(_.id).toSet
        attempts.nonEmpty && attempts.subsetOf(snapshotIds)
      } else snapshotIds.contains(checkpoint.readChangelogHeader(version, None).checkpointId)
    } catch {
      case NonFatal(e) =>
        log.warn(s"txstate: cleanup of $store keeps the files below version $version: its lineage cannot be checked", e)
        false
    }
  }

  private def deleteBelow(checkpoint: StoreCheckpoint, anchor: Long, changelogs: Seq[CheckpointEntry],
      snapshots: Seq[CheckpointEntry], graceMs: Long, store: String, recordRetention: () => Unit): Unit = {
    // Below the anchor only: its own changelog names the id a format-v1 load of that version checks.
    // Segments go with their version (committed ones are covered, aborted attempts' never mattered).
    val oldChangelogs = changelogs.filter(_.version < anchor) ++ checkpoint.segments().filter(_.version < anchor)
    val (oldSnapshots, keptSnapshots) = snapshots.partition(_.version < anchor)
    if (oldChangelogs.nonEmpty || oldSnapshots.nonEmpty) recordRetention()
    oldChangelogs.foreach(e => checkpoint.delete(e.path))
    oldSnapshots.foreach(e => checkpoint.delete(e.path))
    val referenced = keptSnapshots.flatMap { e =>
      try checkpoint.readManifest(e.version, e.id.getOrElse("")).files.map(_.storedName)
      catch {
        case NonFatal(e) => // an unreadable manifest is not a snapshot anyone can load: its files may go
          log.warn(s"txstate: cleanup of $store ignores the unreadable snapshot manifest ${e.getMessage}")
          Seq.empty
      }
    }.toSet
    val cutoff = System.currentTimeMillis() - graceMs
    val orphans = checkpoint.storedFiles().filter { status =>
      !referenced.contains(status.getPath.getName) && status.getModificationTime < cutoff
    }
    orphans.foreach(status => checkpoint.delete(status.getPath))
    if (oldChangelogs.nonEmpty || oldSnapshots.nonEmpty || orphans.nonEmpty) {
      log.info(s"txstate: cleaned up the checkpoint of $store: deleted ${oldChangelogs.size} changelogs and segments, " +
        s"${oldSnapshots.size} snapshot manifests and ${orphans.size} stored files; every version from $anchor on " +
        "stays loadable")
    }
  }
}
