import sbt._
import sbt.Keys._

/**
 * A user's build on one Spark line (`consumer43`, `consumer35_212`, ...): it depends on the published
 * `io.github.txstate:txstate-spark-<line>_<scala>:<version>` from the Maven layout `make test` (or
 * `make publish-local`) wrote, brings its own Spark as Provided as an application does, compiles
 * a class against `txstate.spark.TxStateStoreProvider` and `TxStatePlugin`, and its test checks
 * that they linked from the published jar (jvm/src/consumer). Nothing aggregates these projects:
 * they resolve only after a publish.
 */
object ConsumerProjects {
  def consumerId(line: SparkLine): String = "consumer" + line.key.replace(".", "")

  def consumerProject(line: SparkLine): Project =
    Project(consumerId(line), file("target") / "consumer" / line.folder)
      .settings(LineProjects.lineSettings(line))
      .settings(LineProjects.sparkSettings(line, Provided))
      .settings(
        name := s"txstate-spark-consumer-${line.key}",
        publish / skip := true,
        // build/sbt overrides a build's resolvers with its repositories file (sbt.override.build.repos), as
        // a company's sbt setup often does; the published layout is put first, before Maven Central.
        fullResolvers := {
          val (first, rest) = fullResolvers.value.splitAt(1)
          first ++ (MavenRepository("txstate-published", published.value.toURI.toString) +: rest)
        },
        libraryDependencies ++= Seq(
          "io.github.txstate" % s"txstate-spark-${line.line}_${line.scalaBinary}" % version.value,
          LineProjects.scalatest % Test),
        Compile / unmanagedSourceDirectories := Seq(repoDir.value / "jvm/src/consumer/scala"),
        Test / unmanagedSourceDirectories := Seq(repoDir.value / "jvm/src/consumer/test"),
        Test / javaOptions += s"-Dtxstate.published=${published.value}"
      )

  private def repoDir = Def.setting((ThisBuild / baseDirectory).value)
  private def published = Def.setting(Publishing.publishDir(repoDir.value))
}
