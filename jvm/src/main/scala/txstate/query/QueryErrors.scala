package txstate.query

/** Every error the query layer raises to its caller, written once (docs/ARCHITECTURE.md, "Errors"). */
private[txstate] object QueryErrors {
  private def invalid(code: String, message: String) = new IllegalArgumentException(s"[$code] $message")

  def badRequest(why: String): IllegalArgumentException = invalid("TXSTATE_QUERY_BAD_REQUEST", why)

  def badKey(what: String, why: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_BAD_KEY", s"$what: $why")

  def badPrefix(columns: Int, keySchema: String, maxColumns: Int): IllegalArgumentException =
    invalid("TXSTATE_QUERY_BAD_KEY",
      s"a prefix has 1 to $maxColumns leading key columns of $keySchema, got $columns")

  def badNamedPrefix(names: Seq[String], keyColumns: Seq[String]): IllegalArgumentException = {
    val leading = (1 to keyColumns.length).map(n => keyColumns.take(n).mkString("{", ", ", "}"))
    invalid("TXSTATE_QUERY_BAD_KEY", s"prefix: a prefix object names the leading key columns, one of " +
      s"${leading.mkString(" ")}, got ${names.mkString("{", ", ", "}")}: name the first columns of the key " +
      s"(${keyColumns.mkString(", ")}), or send an array of them in that order")
  }

  def badLimit(limit: Int, max: Int): IllegalArgumentException =
    invalid("TXSTATE_QUERY_BAD_LIMIT", s"page limit must be between 1 and $max, got $limit")

  def badContinuation(queryType: String, why: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_BAD_CONTINUATION",
      s"continuation token is not valid for a $queryType query: $why; " +
        "pass the continuation of the previous page of the same query unchanged")

  def unsupportedTarget(className: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_UNSUPPORTED_TARGET",
      s"cannot query the state of a $className; pass a streaming query started " +
        "in this Spark session (classic, not Spark Connect), or its checkpoint path")

  def unknownCheckpoint(root: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_UNKNOWN_CHECKPOINT", s"checkpoint location $root does not exist")

  def unknownOperator(message: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_UNKNOWN_OPERATOR", s"$message")

  def ambiguousOperator(message: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_AMBIGUOUS_OPERATOR", s"$message")

  def unknownStore(message: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_UNKNOWN_STORE", s"$message")

  def notATxStateStore(message: String): IllegalArgumentException =
    invalid("TXSTATE_QUERY_NOT_A_TXSTATE_STORE", s"$message")

  def noCommittedView(store: String): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_QUERY_NO_VIEW] the checkpoint copy of $store has no committed view")

  def unknownFollower(id: String, open: Seq[String]): IllegalArgumentException =
    invalid("TXSTATE_FOLLOWER_UNKNOWN", s"there is no follower '$id' in this JVM (it was closed, or started in " +
      s"another JVM); open followers: ${if (open.isEmpty) "none" else open.sorted.mkString(", ")}")
}
