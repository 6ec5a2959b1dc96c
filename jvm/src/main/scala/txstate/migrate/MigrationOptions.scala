package txstate.migrate

import scala.util.Try

import org.json4s.{JBool, JInt, JNothing, JNull, JString}
import org.json4s.jackson.JsonMethods

/**
 * One run of migrate, as the command line and the Python function spell it:
 * `CHECKPOINT --to {txstate,rocksdb,hdfs} [--partitions N] [--dry-run] [--undo]
 * [--active-window SECONDS] [--rollback-uncommitted]`.
 */
final case class MigrationOptions(checkpoint: String, to: Option[String], partitions: Option[Int] = None,
    dryRun: Boolean = false, undo: Boolean = false, activeWindowSeconds: Long = MigrationOptions.defaultActiveWindow,
    rollbackUncommitted: Boolean = false) {
  def destination: ProviderChoice =
    ProviderChoice.byName(to.getOrElse(throw MigrationErrors.badArgument("--to", "is required (txstate, rocksdb or hdfs)")))
}

object MigrationOptions {
  /** A query that wrote its logs less than this long ago may still be running. */
  val defaultActiveWindow = 60L

  /** The most partitions a migration rescales to. */
  val maxPartitions = 100000

  val usage: String = "migrate CHECKPOINT --to {txstate,rocksdb,hdfs} [--partitions N] [--dry-run] [--undo] " +
    "[--active-window SECONDS] [--rollback-uncommitted]"

  def fromArgs(args: Seq[String]): MigrationOptions = {
    def bad(problem: String) = MigrationErrors.badArgument("the command line", s"$problem; usage: $usage")
    def number(flag: String, text: String): Long =
      Try(text.toLong).toOption.filter(_ >= 0).getOrElse(throw bad(s"$flag needs a non-negative number, got '$text'"))
    @annotation.tailrec
    def loop(rest: List[String], acc: MigrationOptions): MigrationOptions = rest match {
      case Nil => acc
      case "--to" :: v :: tail => loop(tail, acc.copy(to = Some(v)))
      case "--partitions" :: v :: tail => loop(tail, acc.copy(partitions = Some(partitionCount(number("--partitions", v)))))
      case "--active-window" :: v :: tail => loop(tail, acc.copy(activeWindowSeconds = number("--active-window", v)))
      case "--dry-run" :: tail => loop(tail, acc.copy(dryRun = true))
      case "--undo" :: tail => loop(tail, acc.copy(undo = true))
      case "--rollback-uncommitted" :: tail => loop(tail, acc.copy(rollbackUncommitted = true))
      case flag :: _ if flag.startsWith("--") => throw bad(s"unknown or incomplete option '$flag'")
      case path :: tail if acc.checkpoint.isEmpty => loop(tail, acc.copy(checkpoint = path))
      case extra :: _ => throw bad(s"unexpected argument '$extra'")
    }
    val options = loop(args.toList, MigrationOptions("", None))
    if (options.checkpoint.isEmpty) throw bad("CHECKPOINT is missing")
    options
  }

  def fromJson(json: String): MigrationOptions = {
    val o = JsonMethods.parse(json)
    def text(name: String): Option[String] = (o \ name) match {
      case JString(s) => Some(s)
      case JNothing | JNull => None
      case other => throw MigrationErrors.badArgument(name, s"must be a string, got $other")
    }
    def flag(name: String): Boolean = (o \ name) match {
      case JBool(b) => b
      case _ => false
    }
    def integer(name: String): Option[BigInt] = (o \ name) match {
      case JInt(i) => Some(i)
      case _ => None
    }
    MigrationOptions(text("checkpoint").getOrElse(throw MigrationErrors.badArgument("checkpoint", "is required")),
      text("to"), integer("partitions").map(partitionCount), flag("dryRun"), flag("undo"),
      integer("activeWindowSeconds").map(_.toLong).getOrElse(defaultActiveWindow), flag("rollbackUncommitted"))
  }

  /** A partition count as given; one beyond an Int is refused, never wrapped around to a small count. */
  private def partitionCount(n: BigInt): Int =
    if (n.isValidInt) n.toInt
    else throw MigrationErrors.badArgument("--partitions", s"must be between 1 and $maxPartitions, got $n")
}
