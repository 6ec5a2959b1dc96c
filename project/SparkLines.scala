import sbt._

/**
 * One Spark line txstate-spark builds a jar for (a row of project/spark-lines.tsv).
 *
 * @param line     "4.0", "4.1", ...: the jar's name and its version source folders carry it
 * @param compile  the Spark version compiled against; None when only pyspark ships the jars
 * @param scala    the Scala version that Spark release ships
 * @param pyspark  the pyspark CI installs from PyPI for this line's Python tests
 * @param tests    the spark-sql tests jar the conformance suite runs
 */
final case class SparkLine(line: String, compile: Option[String], scala: String, pyspark: String, tests: String) {
  /** The sbt project id: spark40, spark41, ... */
  def id: String = "spark" + line.replace(".", "")

  /** The sbt project of Spark's conformance suite on this line: conformance40, ... */
  def conformanceId: String = "conformance" + line.replace(".", "")

  /** "2.13" of "2.13.18": the suffix of Scala artifacts and of the jar's name. */
  def scalaBinary: String = scala.split('.').take(2).mkString(".")

  /** target/<jarName>: txstate-spark-<line>_<scala>-<version>.jar */
  def jarName(version: String): String = s"txstate-spark-${line}_$scalaBinary-$version.jar"

  /** Spark and its tests jars come from different releases (the tests jar must be linked loosely). */
  def testsFromOtherRelease: Boolean = !compile.contains(tests)

  /** `line` or newer: the version folders `scala-spark-<line>+` apply to every line from `line` on. */
  def atLeast(other: String): Boolean = SparkLines.order(line) >= SparkLines.order(other)
}

object SparkLines {
  def order(line: String): Int = line.split('.') match {
    case Array(major, minor) => major.toInt * 1000 + minor.toInt
    case _ => sys.error(s"project/spark-lines.tsv: '$line' is not a major.minor Spark line")
  }

  def load(table: File): Seq[SparkLine] =
    IO.readLines(table).map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#")).map { row =>
      row.split("\\s+") match {
        case Array(line, compile, scala, pyspark, tests) =>
          SparkLine(line, Some(compile).filter(_ != "pyspark"), scala, pyspark, tests)
        case _ => sys.error(s"project/spark-lines.tsv: expected 5 columns in '$row'")
      }
    }
}
