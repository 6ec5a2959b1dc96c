package txstate.migrate

import java.util.UUID

/**
 * Fresh checkpoint ids for the stores a format-v2 rescale writes: one per store and new partition,
 * so no copy lands on a file the query's commit log already names. `byOperator` is what the new
 * batch's commit entry lists (`RescaleBatch.withIds`): per operator, per partition, one id per
 * store in the order of the operator's stores.
 */
final case class NewCheckpointIds(ids: Map[(Long, Int, Int), String]) {
  /** The id `store`'s partition lands on. */
  def of(store: StoreToCopy): Int => Option[String] = q => ids.get((store.operatorId, store.storeIndex, q))

  def byOperator: Map[Long, Seq[Seq[String]]] =
    ids.keys.groupBy(_._1).map { case (op, keys) =>
      val stores = keys.map(_._2).toSeq.distinct.sorted
      val partitions = keys.map(_._3).toSeq.distinct.sorted
      op -> partitions.map(q => stores.map(s => ids((op, s, q))))
    }
}

object NewCheckpointIds {
  def of(plans: Seq[StorePlan]): NewCheckpointIds = NewCheckpointIds((for {
    plan <- plans
    q <- plan.targets
  } yield (plan.store.operatorId, plan.store.storeIndex, q) -> UUID.randomUUID().toString).toMap)
}
