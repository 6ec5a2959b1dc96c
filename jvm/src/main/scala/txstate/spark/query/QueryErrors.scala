package txstate.spark.query

/** Every error the query layer raises to its caller, written once (docs/ARCHITECTURE.md, "Errors"). */
private[spark] object QueryErrors {
  def badRequest(why: String): IllegalArgumentException = new IllegalArgumentException(s"[TXSTATE_QUERY_BAD_REQUEST] $why")

  def badKey(what: String, why: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_BAD_KEY] $what: $why")

  def badPrefix(columns: Int, keySchema: String, maxColumns: Int): IllegalArgumentException =
    new IllegalArgumentException(
      s"[TXSTATE_QUERY_BAD_KEY] a prefix has 1 to $maxColumns leading key columns of $keySchema, got $columns")

  def badLimit(limit: Int, max: Int): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_BAD_LIMIT] page limit must be between 1 and $max, got $limit")

  def badContinuation(queryType: String, why: String): IllegalArgumentException =
    new IllegalArgumentException(
      s"[TXSTATE_QUERY_BAD_CONTINUATION] continuation token is not valid for a $queryType query: $why; " +
        "pass the continuation of the previous page of the same query unchanged")

  def unsupportedTarget(className: String): IllegalArgumentException =
    new IllegalArgumentException(
      s"[TXSTATE_QUERY_UNSUPPORTED_TARGET] cannot query the state of a $className; pass a streaming query started " +
        "in this Spark session (classic, not Spark Connect), or its checkpoint path")

  def unknownCheckpoint(root: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_UNKNOWN_CHECKPOINT] checkpoint location $root does not exist")

  def unknownOperator(message: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_UNKNOWN_OPERATOR] $message")

  def ambiguousOperator(message: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_AMBIGUOUS_OPERATOR] $message")

  def unknownStore(message: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_UNKNOWN_STORE] $message")

  def notATxStateStore(message: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_NOT_A_TXSTATE_STORE] $message")

  def noCommittedView(store: String): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_QUERY_NO_VIEW] the checkpoint copy of $store has no committed view")
}
