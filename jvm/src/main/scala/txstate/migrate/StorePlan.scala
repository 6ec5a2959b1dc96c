package txstate.migrate

import txstate.spark.KeyPlacement

/**
 * How one store is copied: partition by partition when the partition count stays, or, when
 * rescaling, the whole store in one pass into `targets`, each key placed by `placement`.
 */
final case class StorePlan(store: StoreToCopy, targets: Seq[Int], placement: Option[KeyPlacement]) {
  /** The units of work, each (what, source partitions, target partitions). */
  def units: Seq[(String, Seq[Int], Seq[Int])] =
    if (placement.isEmpty) store.partitions.map(p => (s"partition $p", Seq(p), Seq(p)))
    else Seq((s"partitions ${store.partitions.mkString(",")} -> ${targets.size} partitions", store.partitions, targets))
}

object StorePlan {
  def apply(store: StoreToCopy, rescaleTo: Option[Int]): StorePlan = rescaleTo match {
    case None => StorePlan(store, store.partitions, None)
    case Some(n) =>
      val hashed = ShuffleColumns.of(store).fold(why => throw MigrationErrors.cannotRescale(store.label, why), identity)
      // With no hashed column the operator runs as one task: its state stays in partition 0.
      val targets = if (hashed == 0) Seq(0) else 0 until n
      StorePlan(store, targets, Some(new KeyPlacement(store.keySchema, hashed, n)))
  }
}
