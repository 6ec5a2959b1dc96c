package txstate.engine

/**
 * One change of a transaction, in the order it must be applied: every range delete of a version
 * comes before its point writes (a point write recorded after a range delete that covers it must
 * survive it; the write buffer keeps that invariant).
 */
sealed trait ChangeRecord
object ChangeRecord {
  final case class Put(key: Array[Byte], value: Array[Byte]) extends ChangeRecord
  final case class Delete(key: Array[Byte]) extends ChangeRecord
  final case class DeleteRange(from: Array[Byte], until: Array[Byte]) extends ChangeRecord
}
