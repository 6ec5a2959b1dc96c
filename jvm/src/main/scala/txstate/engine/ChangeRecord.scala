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

/**
 * Receives changes in apply order as slices of the arrays that hold them: a commit's changelog
 * reads the batch's rows where they lie in its buffer, with no copy per row.
 */
trait ChangeSink {
  def put(key: Array[Byte], keyFrom: Int, keyLength: Int, value: Array[Byte], valueFrom: Int, valueLength: Int): Unit
  def delete(key: Array[Byte], keyFrom: Int, keyLength: Int): Unit
  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit
}

/** Changes in apply order, sent to a sink; the rows must not change while they are sent. */
trait ChangeSource {
  def sendTo(sink: ChangeSink): Unit
}

object ChangeSource {
  /** `records` as a source: each sent as a slice of its whole arrays. */
  def of(records: Iterator[ChangeRecord]): ChangeSource = new ChangeSource {
    def sendTo(sink: ChangeSink): Unit = records.foreach {
      case ChangeRecord.Put(k, v) => sink.put(k, 0, k.length, v, 0, v.length)
      case ChangeRecord.Delete(k) => sink.delete(k, 0, k.length)
      case ChangeRecord.DeleteRange(from, until) => sink.deleteRange(from, until)
    }
  }
}
