package txstate.query

/** Why one partition could not answer (KIP-796's FailureReason, plus DOES_NOT_EXIST). */
sealed abstract class FailureReason(val name: String) extends Serializable {
  override def toString: String = name
}

object FailureReason {
  /** The store does not know the query's type. */
  case object UnknownQueryType extends FailureReason("UNKNOWN_QUERY_TYPE")
  /** The request requires an active store, and the partition could only be read from checkpoint files. */
  case object NotActive extends FailureReason("NOT_ACTIVE")
  /** The partition's committed version is below the request's position bound. */
  case object NotUpToBound extends FailureReason("NOT_UP_TO_BOUND")
  /** The partition exists but no running query has its store loaded. */
  case object NotPresent extends FailureReason("NOT_PRESENT")
  /** The store has no such partition. */
  case object DoesNotExist extends FailureReason("DOES_NOT_EXIST")
  /** Reading the store failed; the message says why. */
  case object StoreException extends FailureReason("STORE_EXCEPTION")
}

/** A partition's failure: the reason and a message that says what to do. */
final case class QueryFailure(reason: FailureReason, message: String)
