package txstate.query.source

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.sources._
import org.apache.spark.sql.types.StructType

import txstate.query.QueryResolver

/** What a read asks each partition's store, from the filters Spark pushed (on `key.*` columns). */
private[source] sealed trait KeyRead extends Serializable {
  /** How EXPLAIN shows it. */
  def describe: String
}

private[source] object KeyRead {
  /** Every row. */
  case object Scan extends KeyRead {
    def describe = "scan"
  }

  /** Point lookups of whole keys. */
  final case class Keys(keys: Seq[UnsafeRow]) extends KeyRead {
    def describe = s"${keys.size} key lookup${if (keys.size == 1) "" else "s"}"
  }

  /** Rows whose first `columns` key columns equal `prefix`. */
  final case class Prefix(prefix: UnsafeRow, columns: Int) extends KeyRead {
    def describe = s"prefix on $columns leading key column${if (columns == 1) "" else "s"}"
  }

  /** Rows whose first key column lies within the bounds (inclusive; Spark re-applies strict ones). */
  final case class Range(lower: Option[UnsafeRow], upper: Option[UnsafeRow]) extends KeyRead {
    def describe = s"range on the first key column (${if (lower.isDefined) "lower" else "no lower"} and " +
      s"${if (upper.isDefined) "upper" else "no upper"} bound)"
  }
}

/**
 * Turns pushed filters into a [[KeyRead]] and the partitions to read. Spark re-applies every
 * filter to what the read returns, so a read may return more than the filters accept, never less:
 *  - equality (or `IN`) on every key column: lookups of those keys (at most [[maxKeys]]);
 *  - equality on the leading key columns: a prefix read;
 *  - bounds on the first key column: a range read;
 *  - equality or `IN` on `partition_id`: only those partitions.
 */
private[source] object KeyFilters {
  val maxKeys = 10000

  final case class Plan(read: KeyRead, partitions: Option[Set[Int]], used: Seq[Filter])

  def plan(keySchema: StructType, filters: Seq[Filter]): Plan = {
    val columns = keySchema.fields.toSeq
    def column(attribute: String): Option[Int] =
      columns.indexWhere(f => attribute == s"key.${f.name}" || attribute == s"key.`${f.name}`") match {
        case -1 => None
        case i => Some(i)
      }
    def internal(i: Int, value: Any): Option[Any] =
      if (value == null) None
      else try Some(CatalystTypeConverters.createToCatalystConverter(columns(i).dataType)(value))
      catch { case NonFatal(_) => None }

    // Candidate values per key column, from equalities and INs (each filter narrows them).
    val candidates = scala.collection.mutable.Map.empty[Int, Seq[Any]]
    val equalities = scala.collection.mutable.Map.empty[Int, Seq[Filter]]
    val bounds, byPartition = Seq.newBuilder[Filter]
    var lower, upper = Option.empty[Any]
    var partitions = Option.empty[Set[Int]]
    filters.foreach {
      case f @ (_: EqualTo | _: EqualNullSafe | _: In) if column(f.references.head).isDefined =>
        val i = column(f.references.head).get
        val values = (f match {
          case In(_, vs) => vs.toSeq
          case EqualTo(_, v) => Seq(v)
          case EqualNullSafe(_, v) => Seq(v)
          case _ => Nil
        }).map(internal(i, _))
        if (values.forall(_.isDefined)) {
          val narrowed = values.flatten.distinct
          candidates.update(i, candidates.get(i).fold(narrowed)(old => old.filter(narrowed.contains)))
          equalities.update(i, equalities.getOrElse(i, Nil) :+ f)
        }
      // Several bounds on one side: any of them will do, Spark re-applies them all.
      case f @ (GreaterThan(a, v)) if column(a).contains(0) => internal(0, v).foreach { x => lower = Some(x); bounds += f }
      case f @ (GreaterThanOrEqual(a, v)) if column(a).contains(0) => internal(0, v).foreach { x => lower = Some(x); bounds += f }
      case f @ (LessThan(a, v)) if column(a).contains(0) => internal(0, v).foreach { x => upper = Some(x); bounds += f }
      case f @ (LessThanOrEqual(a, v)) if column(a).contains(0) => internal(0, v).foreach { x => upper = Some(x); bounds += f }
      case f @ EqualTo("partition_id", p: Int) =>
        partitions = Some(partitions.fold(Set(p))(_.intersect(Set(p)))); byPartition += f
      case f @ In("partition_id", ps) if ps.forall(_.isInstanceOf[Int]) =>
        val set = ps.map(_.asInstanceOf[Int]).toSet
        partitions = Some(partitions.fold(set)(_.intersect(set))); byPartition += f
      case _ => ()
    }
    val leading = Iterator.from(0).takeWhile(i => i < columns.size && candidates.contains(i)).size
    def row(values: Seq[Any], n: Int): UnsafeRow =
      QueryResolver.toUnsafe(InternalRow.fromSeq(values), StructType(columns.take(n)), "a pushed key filter")
    val combinations = (0 until leading).map(candidates(_).size.toLong).product
    def onLeading = (0 until leading).flatMap(equalities(_))
    val (read, used) =
      if (columns.nonEmpty && leading == columns.size && combinations <= maxKeys) {
        val keys = (0 until leading).foldLeft(Seq(Seq.empty[Any]))((acc, i) => for (a <- acc; v <- candidates(i)) yield a :+ v)
        (KeyRead.Keys(keys.map(row(_, leading))), onLeading)
      } else if (leading > 0 && (0 until leading).forall(candidates(_).size == 1)) {
        (KeyRead.Prefix(row((0 until leading).map(candidates(_).head), leading), leading), onLeading)
      } else if (columns.nonEmpty && (lower.isDefined || upper.isDefined)) {
        (KeyRead.Range(lower.map(v => row(Seq(v), 1)), upper.map(v => row(Seq(v), 1))), bounds.result())
      } else (KeyRead.Scan, Nil)
    Plan(read, partitions, used ++ byPartition.result())
  }
}
