package txstate

/** What one layer may import from another: everything, or these top-level names. */
sealed trait Allowed
object Allowed {
  case object Everything extends Allowed
  final case class Names(names: Set[String]) extends Allowed
}

/**
 * One row of the import rules in docs/ARCHITECTURE.md ("Layers and what each may import"):
 * its packages, what it may import from each other txstate layer, and which other packages it may
 * import besides the JDK and Scala (None: any).
 */
final case class LayerRule(layer: String, packages: Seq[String], fromLayers: Map[String, Allowed],
    otherPackages: Option[Seq[String]]) {
  def owns(pkg: String): Boolean = packages.exists(p => pkg == p || pkg.startsWith(p + "."))
}

/** The import rules, read from the document so that the document and the check cannot disagree. */
object LayerRules {
  val section = "## Layers and what each may import"
  private val tableHeader = "| Layer | Packages | From other txstate layers | Other imports (besides the JDK and Scala) |"
  private val ticked = "`([^`]+)`".r

  def fromDocument(doc: String): Seq[LayerRule] = {
    val lines = doc.linesIterator.toSeq
    val start = lines.indexWhere(_.trim == tableHeader)
    require(start >= 0, s"docs/ARCHITECTURE.md has no import-rules table headed '$tableHeader'")
    lines.drop(start + 2).takeWhile(_.startsWith("|")).map(row)
  }

  private def row(line: String): LayerRule = line.split('|').map(_.trim).toSeq match {
    case Seq(_, layer, packages, from, other) =>
      LayerRule(layer, ticked.findAllMatchIn(packages).map(_.group(1)).toSeq, fromLayers(from, layer), otherPackages(other))
    case _ => sys.error(s"docs/ARCHITECTURE.md: an import-rules row needs four cells: $line")
  }

  // `nothing`, or `engine: all; store: `A`, `B``.
  private def fromLayers(cell: String, layer: String): Map[String, Allowed] =
    if (cell == "nothing") Map.empty
    else cell.split(';').map(_.trim).map { part =>
      part.split(":", 2).map(_.trim) match {
        case Array(other, "all") => other -> Allowed.Everything
        case Array(other, names) => other -> Allowed.Names(ticked.findAllMatchIn(names).map(_.group(1)).toSet)
        case _ => sys.error(s"docs/ARCHITECTURE.md: layer $layer's rule '$part' is not 'layer: all' or 'layer: `Name`, ...'")
      }
    }.toMap

  private def otherPackages(cell: String): Option[Seq[String]] =
    if (cell == "anything") None else Some(ticked.findAllMatchIn(cell).map(_.group(1)).toSeq)

  /** The JDK and Scala: every layer may use them. */
  val everywhere: Seq[String] = Seq("java.", "javax.", "scala.")
}
