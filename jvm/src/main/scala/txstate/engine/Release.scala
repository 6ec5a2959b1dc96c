package txstate.engine

import java.util.Properties

import txstate.compat.ScalaLibrary.Using

/** The txstate-spark release this build is, and its Spark line: recorded in every commit point it writes. */
object Release {
  private val properties: Properties = {
    val read = new Properties()
    Option(getClass.getResourceAsStream("/txstate-release.properties")).foreach { in =>
      Using.resource(in)(stream => read.load(stream))
    }
    read
  }

  private def property(name: String): Option[String] = Option(properties.getProperty(name)).map(_.trim).filter(_.nonEmpty)

  /** From the properties file the build generates from VERSION; "development" outside a build. */
  val version: String = property("version").getOrElse("development")

  /** The Spark line this jar is built for ("3.5", "4.3"), when built by the project's build. */
  val sparkLine: Option[String] = property("spark")

  /**
   * What commit points and changelogs record as their writer, e.g. "0.2.0 (Spark 4.3)": the line
   * says which RocksDB wrote a store's files, which an older line's RocksDB may not read.
   */
  val writer: String = version + sparkLine.fold("")(line => s" (Spark $line)")
}
