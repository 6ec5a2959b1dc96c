import sbt._

/**
 * One jar txstate-spark builds: a Spark line at one Scala version (a row of project/spark-lines.tsv
 * or project/spark-lines-preview.tsv).
 *
 * @param key      the row's name: the Spark line ("4.0", "4.1", ...), with the Scala binary version
 *                 after an underscore when the line is built for more than one ("3.5_2.12")
 * @param compile  the Spark version compiled against; None when only pyspark ships the jars
 * @param scala    the Scala version that Spark release ships
 * @param pyspark  the pyspark CI installs from PyPI for this line's Python tests ("-": none ships
 *                 this Spark build, so the line gets the Scala tests and conformance only)
 * @param tests    the spark-sql tests jar the conformance suite runs
 * @param release  the Java release the classes are compiled for (`-release`): the oldest JDK that
 *                 Spark line runs on
 * @param rocksdb  the rocksdbjni that Spark release ships (Provided: the cluster's is the one loaded)
 * @param hadoop   the Hadoop client that Spark release ships (Provided in the published POM)
 */
final case class SparkLine(key: String, compile: Option[String], scala: String, pyspark: String, tests: String,
    release: Int, rocksdb: String, hadoop: String) {
  /** "3.5" of "3.5_2.12", "4.1" of "4.1": the Spark line, which names the version source folders. */
  def line: String = key.takeWhile(_ != '_')

  /** The sbt project id: spark40, spark41, ..., spark35_212 (the key without dots). */
  def id: String = "spark" + key.replace(".", "")

  /** The sbt project of Spark's conformance suite on this line: conformance40, ..., conformance35_212 */
  def conformanceId: String = "conformance" + key.replace(".", "")

  /** "2.13" of "2.13.18": the suffix of Scala artifacts and of the jar's name. */
  def scalaBinary: String = scala.split('.').take(2).mkString(".")

  /** target/<jarName>: txstate-spark-<line>_<scala>-<version>.jar */
  def jarName(version: String): String = s"txstate-spark-${line}_$scalaBinary-$version.jar"

  /** The Spark release this line's jar is built against: the compile column, else its pyspark's. */
  def sparkVersion: String = compile.getOrElse(pyspark)

  /** Where sbt keeps the line's classes, below target/lines and target/conformance. */
  def folder: String = key

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
        case Array(key, compile, scala, pyspark, tests, release, rocksdb, hadoop) =>
          val line = SparkLine(key, Some(compile).filter(_ != "pyspark"), scala, pyspark, tests, release.toInt, rocksdb,
            hadoop)
          if (key.contains('_') && key != s"${line.line}_${line.scalaBinary}")
            sys.error(s"$table: the row '$key' builds for Scala ${line.scalaBinary}: name it ${line.line}_${line.scalaBinary}")
          order(line.line)
          line
        case _ => sys.error(s"$table: expected 8 columns in '$row'")
      }
    }
}
