package txstate.spark

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StateStoreId

import txstate.compat.ScalaLibrary.CollectionConverters._

/**
 * The txstate providers loaded in this JVM, by store instance and query run: what interactive
 * queries read (docs/ARCHITECTURE.md, "Interactive queries"). A provider registers when it first opens its store and leaves when
 * it closes, so a store listed here is held by this JVM.
 */
object LiveStores {
  /** A store instance independent of how its checkpoint path was spelled. */
  final case class InstanceKey(stateRoot: String, operatorId: Long, partitionId: Int, storeName: String)

  object InstanceKey {
    def of(id: StateStoreId): InstanceKey =
      InstanceKey(normalize(id.checkpointRootLocation), id.operatorId, id.partitionId, id.storeName)
  }

  private final case class Registration(runId: Option[UUID], provider: TxStateStoreProvider)

  private val registrations = new ConcurrentHashMap[InstanceKey, List[Registration]]()

  /** One spelling per location: `file:/a/b/` and `file:/a/b` are the same state root. */
  def normalize(location: String): String = new Path(location).toUri.normalize.toString.stripSuffix("/")

  private[spark] def register(id: StateStoreId, runId: Option[UUID], provider: TxStateStoreProvider): Unit =
    registrations.merge(InstanceKey.of(id), List(Registration(runId, provider)), (old, added) => added ++ old)

  private[spark] def unregister(id: StateStoreId, provider: TxStateStoreProvider): Unit =
    registrations.computeIfPresent(InstanceKey.of(id), (_, old) => old.filterNot(_.provider eq provider) match {
      case Nil => null
      case rest => rest
    })

  /**
   * Hands every store under `stateRoot` loaded in this JVM back to its checkpoint, for a checkpoint
   * about to change hands (migrate): each provider uploads what it has staged and closes, so no
   * stopped query's provider writes there later. Returns how many were released.
   */
  def releaseAll(stateRoot: String): Int = {
    val root = normalize(stateRoot)
    val providers = registrations.asScala.toSeq.collect { case (k, regs) if k.stateRoot == root => regs.map(_.provider) }
      .flatten.distinct
    providers.foreach { p =>
      p.doMaintenance()
      p.close()
    }
    providers.size
  }

  /** The provider serving `key` for query run `runId` in this JVM. */
  def find(key: InstanceKey, runId: UUID): Option[TxStateStoreProvider] =
    Option(registrations.get(key)).flatMap(_.find(_.runId.contains(runId))).map(_.provider)
}
