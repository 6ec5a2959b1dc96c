package txstate.operate

import java.nio.file.Files

import scala.util.hashing.MurmurHash3

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import txstate.engine.{EngineOptions, KeyRange}
import txstate.store.{FollowerReplica, LocalDirectory}

/** What a replay of one store partition's newest version holds. */
final case class Replayed(keys: Long, digest: Long, oldestWriteMs: Option[Long], newestWriteMs: Option[Long])

/**
 * `verify --deep`: loads a store partition's newest version into a scratch local database the way a
 * restart would (a read-only follower's replica: snapshot plus changelogs, through the read-only
 * view), then reads every row, counting keys, summing a 64-bit hash of each key and value (an
 * order-free digest) and noting the oldest and newest write stamps. The scratch directory goes on close.
 */
object DeepReplay {
  private val viewWaitMs = 60000L

  def run(storeDir: Path, hadoopConf: Configuration, idsInFileNames: Boolean, version: Long,
      checkpointId: Option[String], label: String): Replayed = {
    val scratch = Files.createTempDirectory("txstate-verify-").toFile
    try {
      val replica = FollowerReplica.open(LocalDirectory.temporary(new java.io.File(scratch, "db")), storeDir, hadoopConf,
        EngineOptions(), idsInFileNames, Int.MaxValue, s"verify copy of $label")
      try {
        replica.advanceTo(version, checkpointId)
        replica.readCommittedView(viewWaitMs) { view =>
          val rows = view.range(KeyRange.all)
          try rows.foldLeft(Replayed(0, 0, None, None)) { (sum, row) =>
            val time = Some(row.written.timeMs).filter(_ >= 0)
            Replayed(sum.keys + 1, sum.digest + hash(row.key, row.value),
              pick(sum.oldestWriteMs, time)(math.min), pick(sum.newestWriteMs, time)(math.max))
          } finally rows.close()
        }.getOrElse(throw OperateErrors.badArgument(label, s"published no view of version $version within a minute"))
      } finally replica.close()
    } finally scratch.delete()
  }

  private def pick(a: Option[Long], b: Option[Long])(f: (Long, Long) => Long): Option[Long] =
    (a ++ b).reduceOption(f)

  private def hash(key: Array[Byte], value: Array[Byte]): Long = {
    val high = MurmurHash3.bytesHash(value, MurmurHash3.bytesHash(key, 0x3c6ef372))
    val low = MurmurHash3.bytesHash(value, MurmurHash3.bytesHash(key, 0x5be0cd19))
    (high.toLong << 32) | (low.toLong & 0xffffffffL)
  }
}
