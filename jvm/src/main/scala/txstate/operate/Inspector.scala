package txstate.operate

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

/**
 * Reads what a checkpoint holds, store partition by store partition (docs/ARCHITECTURE.md,
 * "Inspect and verify"): bytes by kind and versions for every provider, and for txstate stores
 * what the newest version's changelog header says (keys, formats, release, times) and the chain a
 * load would take. It reads headers only, never records or stored files.
 */
final class Inspector(checkpoint: OpenedCheckpoint, progress: OperateProgress) {
  def run(): CheckpointInspection = {
    val started = System.currentTimeMillis()
    val logs = checkpoint.logs
    val stores = checkpoint.stores
    progress.enter("inspect", stores.map(_.partitionDirs.size).sum)
    val facts = stores.map(store)
    val notes = if (stores.isEmpty) Seq("the checkpoint has no stateful operator (no state/<operator> folder)") else Nil
    CheckpointInspection(checkpoint.root.toString, logs.providerClass, checkpoint.provider, logs.checkpointFormat,
      logs.lastCommittedBatch, logs.lastCommittedBatch.flatMap(logs.commitTimeMs), checkpoint.minBatchesToRetain, facts,
      notes, System.currentTimeMillis() - started)
  }

  private def store(store: OperatorStore): StoreFacts = {
    val kind = checkpoint.provider
    val partitions = store.partitionDirs.map { case (p, dir) =>
      progress.starting(s"${store.label}, partition $p")
      val facts = partition(store, p, dir, kind)
      progress.finished()
      facts
    }
    val cannotRead =
      if (kind == ProviderKind.txstate) Seq("the age of the oldest write: no header records it; it takes a scan of " +
        "every row (the newest write is the last batch's time)")
      else if (StoreFileKinds.known(kind)) Seq(s"keys and times: Spark's $kind provider keeps them inside its " +
        "compressed files, which only its own load reads; inspect shows its files, bytes, versions and load chain")
      else Seq(s"the provider ${checkpoint.logs.providerClass.getOrElse(kind)} is unknown to inspect: bytes only")
    StoreFacts(store.operatorId, store.operatorName, store.storeName, kind, store.numPartitions, partitions,
      Skews.of(partitions, checkpoint.root.toString), cannotRead)
  }

  private def partition(store: OperatorStore, p: Int, dir: Path, kind: String): PartitionFacts = {
    val files = StoreLayout.files(checkpoint.fs, dir)
    files.foreach(_ => progress.fileRead())
    val versions = files.flatMap(f => StoreFileKinds.versionFile(kind, f))
    val base = PartitionFacts(p, dir.toString, StoreFileKinds.bytes(kind, files), Inspector.lowest(versions.map(_.version)),
      Inspector.lowest(versions.map(-_.version)).map(v => -v), None, None, Nil)
    val version = checkpoint.version
    if (version == 0) base
    else if (kind == ProviderKind.txstate) {
      try {
        val partition = checkpoint.txstatePartition(dir)
        val id = partition.checkpointId(version, checkpoint.committedId(version, store, p))
        base.copy(chain = Some(partition.chain(version, id)), header = Some(partition.facts(version, id)))
      } catch {
        case NonFatal(e) => base.copy(unreadable = Seq(s"version $version: ${e.getMessage}"))
      }
    } else if (StoreFileKinds.known(kind)) base.copy(chain = Some(Inspector.fileChain(versions, version)))
    else base
  }
}

object Inspector {
  /** The smallest of `values`, if any (Scala 2.12 has no `minOption`). */
  def lowest(values: Seq[Long]): Option[Long] = if (values.isEmpty) None else Some(values.min)

  /**
   * The chain a provider that names files by version alone loads `version` from: the newest
   * snapshot at or below it, then every changelog above that snapshot.
   */
  def fileChain(files: Seq[VersionFile], version: Long): LoadChain = {
    val snapshot = lowest(files.filter(f => f.snapshot && f.version <= version).map(-_.version)).map(v => -v)
    val needed = (snapshot.getOrElse(0L) + 1 to version).toList
    val changelogs = files.filterNot(_.snapshot).map(_.version).toSet
    needed.filterNot(changelogs) match {
      case Nil => LoadChain(snapshot, needed, None)
      case missing => LoadChain(snapshot, needed, Some(s"no snapshot at or below version $version is followed by " +
        s"every changelog up to it: missing version ${missing.mkString(", ")}"))
    }
  }
}
