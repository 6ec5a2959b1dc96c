package txstate.operate

/**
 * Every error of `inspect` and `verify`, written once (docs/ARCHITECTURE.md, "Errors"). Both are
 * the caller's mistakes (a path that is no checkpoint, a bad option): the command line exits with
 * status 2 on them. Damage found in a checkpoint is never an exception here but a finding.
 */
object OperateErrors {
  def notACheckpoint(path: String, why: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_OPERATE_NOT_A_CHECKPOINT] $path is not a streaming query's " +
      s"checkpoint: $why. Pass the query's checkpointLocation, the folder that holds offsets/, commits/ and state/.")

  def badArgument(what: String, why: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_OPERATE_BAD_ARGUMENT] $what $why.")
}
