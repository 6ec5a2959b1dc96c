package txstate.compat

/**
 * The Scala 2.13 library calls the shared code makes that Scala 2.12 lacks, under one name
 * (docs/ARCHITECTURE.md, "Spark lines"). On 2.13 they are the library's own; scala-2.12 has the
 * same names, written for 2.12.
 */
object ScalaLibrary {
  val Using: scala.util.Using.type = scala.util.Using
  val CollectionConverters: scala.jdk.CollectionConverters.type = scala.jdk.CollectionConverters
}
