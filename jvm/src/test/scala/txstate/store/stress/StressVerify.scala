package txstate.store.stress

import txstate.checkpoint.CheckpointReader
import txstate.operate.{OperateProgress, PartitionVerifier, TxStatePartition}
import txstate.store.ReadOnlyFileSystem

/** The operate layer's verify of the schedule's one store partition: what `txstate verify` would report. */
object StressVerify {
  def findings(world: StressWorld, newest: Long): Seq[String] = {
    val reads = ReadOnlyFileSystem.reads(world.root, world.conf)
    val partition = new TxStatePartition(new CheckpointReader(world.root, reads), reads, world.options.idsInFileNames)
    val verifier = new PartitionVerifier(partition, "stress store", 0, new OperateProgress)
    val (found, _) = verifier.verify(newest, world.retain, v => world.id(v))
    found.map(f => s"${f.path}: ${f.problem} (${f.consequence})")
  }
}
