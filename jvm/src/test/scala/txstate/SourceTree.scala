package txstate

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.util.matching.Regex

/** One main source file: where it is, its package and every txstate name or other package it uses. */
final case class SourceFile(path: String, pkg: String, txstateRefs: Seq[String], otherImports: Seq[String]) {
  def name: String = path.split('/').last.stripSuffix(".scala")
}

/**
 * The main Scala sources of the repository as the layer rules see them, read as text: the package
 * clause, import statements (with their selectors) and fully qualified `txstate.` names in code.
 * Comments and string literals are dropped first, so a scaladoc link or a class name in a message
 * is not a dependency.
 */
object SourceTree {
  /** The repository root: the forked test JVM runs in its sbt project's folder below it. */
  lazy val root: File = Iterator.iterate(new File(".").getAbsoluteFile)(_.getParentFile)
    .takeWhile(_ != null)
    .find(d => new File(d, "docs/ARCHITECTURE.md").isFile && new File(d, "jvm/src/main").isDirectory)
    .getOrElse(sys.error("cannot find the repository root (docs/ARCHITECTURE.md) above " + new File(".").getAbsolutePath))

  def read(relative: String): String = new String(Files.readAllBytes(new File(root, relative).toPath), UTF_8)

  /** Every main source folder: `jvm/src/main/scala` and each line's `scala-spark-*`. */
  def mainFolders: Seq[File] =
    Option(new File(root, "jvm/src/main").listFiles).toSeq.flatten.filter(d => d.isDirectory && d.getName.startsWith("scala"))
      .sortBy(_.getName)

  def mainFiles: Seq[SourceFile] = mainFolders.flatMap(folder => scalaFiles(folder).map(parse))

  private def scalaFiles(dir: File): Seq[File] =
    Option(dir.listFiles).toSeq.flatten.sortBy(_.getName).flatMap { f =>
      if (f.isDirectory) scalaFiles(f) else if (f.getName.endsWith(".scala")) Seq(f) else Nil
    }

  private val packageClause: Regex = """(?m)^package\s+(?!object\b)([\w.]+)""".r
  private val packageObject: Regex = """(?m)^package\s+object\s+(\w+)""".r
  // `import a.b.C`, `import a.b._`, `import a.b.{C, D => E}` (selectors may span lines).
  private val importStatement: Regex = """(?m)^\s*import\s+([\w.]+?)(?:\.\{([^}]*)\}|\.(\w+|_))\s*$""".r
  private val qualifiedTxstate: Regex = """(?<![\w.])(txstate(?:\.\w+)+)""".r

  def parse(file: File): SourceFile = {
    val text = withoutCommentsAndStrings(new String(Files.readAllBytes(file.toPath), UTF_8))
    val pkg = packageClause.findFirstMatchIn(text).map(_.group(1))
      .getOrElse(sys.error(s"${relative(file)} has no package clause"))
      .concat(packageObject.findFirstMatchIn(text).fold("")("." + _.group(1)))
    val imports = importStatement.findAllMatchIn(text).toSeq.flatMap { m =>
      val selectors = Option(m.group(2)).map(_.split(',').toSeq.map(_.split("=>").head.trim).filter(_.nonEmpty))
        .getOrElse(Seq(m.group(3)))
      selectors.map(s => s"${m.group(1)}.$s")
    }
    val code = importStatement.replaceAllIn(packageObject.replaceAllIn(packageClause.replaceAllIn(text, ""), ""), "")
    val inline = qualifiedTxstate.findAllMatchIn(code).map(_.group(1)).toSeq
    // `import TxEngine._` and the like name this file's own objects, not another package.
    val (txstate, other) = imports.filterNot(_.head.isUpper).partition(_.startsWith("txstate."))
    SourceFile(relative(file), pkg, (txstate ++ inline).distinct, other.distinct)
  }

  def relative(file: File): String = root.toPath.relativize(file.toPath).toString

  /** Drops `//` and `/* */` comments and string literals, keeping line breaks. */
  def withoutCommentsAndStrings(text: String): String = {
    val out = new StringBuilder
    var i = 0
    def at(s: String) = text.startsWith(s, i)
    while (i < text.length) {
      if (at("//")) { while (i < text.length && text(i) != '\n') i += 1 }
      else if (at("/*")) {
        val end = text.indexOf("*/", i + 2)
        val stop = if (end < 0) text.length else end + 2
        out ++= text.substring(i, stop).filter(_ == '\n')
        i = stop
      } else if (at("\"\"\"")) {
        val end = text.indexOf("\"\"\"", i + 3)
        val stop = if (end < 0) text.length else end + 3
        out ++= "\"\"" ++= text.substring(i, stop).filter(_ == '\n')
        i = stop
      } else if (text(i) == '"') {
        i += 1
        while (i < text.length && text(i) != '"' && text(i) != '\n') { if (text(i) == '\\') i += 1; i += 1 }
        i += 1
        out ++= "\"\""
      } else if (at("'\"'")) { out ++= "' '"; i += 3 }
      else { out += text(i); i += 1 }
    }
    out.toString
  }
}
