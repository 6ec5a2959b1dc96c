package txstate.engine

import java.util.Properties

import txstate.compat.ScalaLibrary.Using

/** The txstate-spark release this build is: recorded in every commit point it writes. */
object Release {
  /** From the properties file the build generates from VERSION; "development" outside a build. */
  val version: String = {
    val found = Option(getClass.getResourceAsStream("/txstate-release.properties")).flatMap { in =>
      Using.resource(in) { stream =>
        val properties = new Properties()
        properties.load(stream)
        Option(properties.getProperty("version")).map(_.trim).filter(_.nonEmpty)
      }
    }
    found.getOrElse("development")
  }
}
