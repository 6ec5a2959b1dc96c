package txstate

import org.scalatest.funsuite.AnyFunSuite

/**
 * The layer rules of docs/ARCHITECTURE.md ("Layers and what each may import") hold for every main
 * source file of every Spark line, and the document names exactly what the code uses: a permission
 * no file needs fails too, so the table cannot drift from the code in either direction.
 */
final class LayerRulesTest extends AnyFunSuite {
  private val doc = SourceTree.read("docs/ARCHITECTURE.md")
  private val rules = LayerRules.fromDocument(doc)
  private val files = SourceTree.mainFiles

  private def layerOf(pkg: String): Option[LayerRule] =
    rules.filter(_.owns(pkg)).sortBy(r => -r.packages.filter(p => pkg == p || pkg.startsWith(p + ".")).map(_.length).max).headOption

  /** A txstate name's layer and the top-level name it uses there (`_` for a wildcard). */
  private def target(ref: String): Option[(LayerRule, String)] = {
    val owners = rules.flatMap(r => r.packages.filter(p => ref.startsWith(p + ".")).map(p => (r, p)))
    owners.sortBy(-_._2.length).headOption.map { case (rule, pkg) =>
      val rest = ref.stripPrefix(pkg + ".").split('.')
      (rule, rest.find(s => s == "_" || s.head.isUpper).getOrElse(rest.last))
    }
  }

  test("the document's import rules name every layer, and every layer has its folder") {
    assert(rules.map(_.layer).toSet == Set("engine", "checkpoint", "store", "adapter", "query", "serve", "migrate", "operate", "compat"))
    val folders = SourceTree.mainFolders.flatMap(f => Option(new java.io.File(f, "txstate").listFiles).toSeq.flatten)
      .filter(_.isDirectory).map(d => s"txstate.${d.getName}").toSet
    val layerPackages = rules.flatMap(_.packages).filter(_.startsWith("txstate.")).toSet
    assert(folders == layerPackages, "the folders under jvm/src/main/scala*/txstate are the layer table's packages")
  }

  test("every main source file sits in its package's folder, and its package is a layer's") {
    val misplaced = files.filterNot(f => f.path.split('/').dropRight(1).mkString("/").endsWith(f.pkg.replace('.', '/')))
    assert(misplaced.isEmpty, misplaced.map(f => s"${f.path}: package ${f.pkg}").mkString("\n"))
    val homeless = files.filter(f => layerOf(f.pkg).isEmpty)
    assert(homeless.isEmpty, homeless.map(f => s"${f.path}: package ${f.pkg} is in no layer").mkString("\n"))
  }

  test("every import from another txstate layer is one the document allows") {
    val violations = for {
      file <- files
      own = layerOf(file.pkg).get
      ref <- file.txstateRefs
      problem <- target(ref) match {
        case None => Some(s"$ref is in no layer")
        case Some((to, _)) if to == own => None
        case Some((to, name)) => own.fromLayers.get(to.layer) match {
          case None => Some(s"the ${own.layer} layer may not import from the ${to.layer} layer ($ref)")
          case Some(Allowed.Everything) => None
          case Some(Allowed.Names(names)) if names(name) => None
          case Some(Allowed.Names(names)) =>
            Some(s"the ${own.layer} layer may import from ${to.layer} only ${names.toSeq.sorted.mkString(", ")}, not $name ($ref)")
        }
      }
    } yield s"${file.path}: $problem"
    assert(violations.isEmpty, violations.mkString("\n") +
      "\n(docs/ARCHITECTURE.md, \"Layers and what each may import\": fix the import, or change the rule there with a reason)")
  }

  test("every other import is one the layer's rule allows") {
    val violations = for {
      file <- files
      own = layerOf(file.pkg).get
      allowed <- own.otherPackages.toSeq
      imported <- file.otherImports
      if !(LayerRules.everywhere ++ allowed).exists(p => imported.startsWith(p))
    } yield s"${file.path}: the ${own.layer} layer may not import $imported (only ${allowed.mkString(", ")}, the JDK and Scala)"
    assert(violations.isEmpty, violations.mkString("\n"))
  }

  test("every name the document allows is used by some file of that layer") {
    val used: Set[(String, String, String)] = (for {
      file <- files
      own = layerOf(file.pkg).get
      ref <- file.txstateRefs
      (to, name) <- target(ref)
    } yield (own.layer, to.layer, name)).toSet
    val stale = for {
      rule <- rules
      (to, allowed) <- rule.fromLayers.toSeq
      name <- allowed match { case Allowed.Names(ns) => ns.toSeq; case Allowed.Everything => Nil }
      if !used((rule.layer, to, name))
    } yield s"${rule.layer} may import $name from $to, but no file does: remove it from the rule"
    assert(stale.isEmpty, stale.mkString("\n"))
  }

  test("every file that differs by Spark line is named in the document's 'Spark lines' section") {
    val section = sectionOf("## Spark lines")
    val perLine = files.filterNot(_.path.startsWith("jvm/src/main/scala/")).map(_.name).distinct
    val missing = perLine.filterNot(n => section.contains(n))
    assert(missing.isEmpty, s"not in docs/ARCHITECTURE.md, 'Spark lines': ${missing.mkString(", ")}")
  }

  test("every layer's error factory is in the document's 'Errors' table") {
    val section = sectionOf("## Errors")
    val factories = files.map(_.name).filter(_.endsWith("Errors")).distinct
    val missing = factories.filterNot(n => section.contains(s"`$n`"))
    assert(factories.nonEmpty && missing.isEmpty, s"not in docs/ARCHITECTURE.md, 'Errors': ${missing.mkString(", ")}")
  }

  private def sectionOf(heading: String): String = {
    val start = doc.indexOf("\n" + heading + "\n")
    assert(start >= 0, s"docs/ARCHITECTURE.md has no section $heading")
    val end = doc.indexOf("\n## ", start + heading.length + 1)
    doc.substring(start, if (end < 0) doc.length else end)
  }
}
