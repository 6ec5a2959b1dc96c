import sbt._
import sbt.Keys._

import scala.xml.{Elem, Node}
import scala.xml.transform.{RewriteRule, RuleTransformer}

/**
 * The Maven artifacts of one Spark line (`make publish-local DIR=...`):
 * `io.github.txstate:txstate-spark-<line>_<scala>:<version>` with the jar the wheel carries, its
 * sources, its Scaladoc as the javadoc jar, and a POM with what Maven Central asks for.
 *
 * The POM's dependencies are exactly what every Spark application already has and must not bring a
 * second copy of, all `provided`: Spark, the Hadoop client, the Scala library and rocksdbjni (Spark
 * loads the RocksDB it was built with; JNI classes cannot be shaded). A Provided dependency is not
 * transitive, so `--packages` resolves the jar alone. They are written from the line's row of
 * project/spark-lines.tsv rather than from the build's classpath: 4.3 compiles against pyspark's
 * jars, which the build does not declare as a dependency.
 */
object Publishing {
  /** Where `publish` writes a Maven repository layout: $TXSTATE_PUBLISH_DIR (the Makefile's DIR). */
  val publishDirEnv = "TXSTATE_PUBLISH_DIR"

  /** $TXSTATE_PUBLISH_DIR, else target/maven-repo (what `make test` publishes to and consumes from). */
  def publishDir(repo: File): File =
    sys.env.get(publishDirEnv).filter(_.nonEmpty).map(file).getOrElse(repo / "target" / "maven-repo").getAbsoluteFile

  private val repository = "https://github.com/txstate/txstate-spark"

  def settings(line: SparkLine): Seq[Setting[_]] = Seq(
    // The Scala binary version is appended by sbt (crossPaths): txstate-spark-3.5_2.12.
    moduleName := s"txstate-spark-${line.line}",
    description := s"A transactional RocksDB state store for Apache Spark ${line.line} Structured Streaming " +
      "(state store provider txstate.spark.TxStateStoreProvider, executor metrics plugin txstate.spark.TxStatePlugin)",
    homepage := Some(url(repository)),
    licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
    scmInfo := Some(ScmInfo(url(repository), s"scm:git:$repository.git", s"scm:git:$repository.git")),
    developers := List(Developer("txstate", "The txstate-spark developers", "", url(repository))),
    publishMavenStyle := true,
    versionScheme := Some("early-semver"),
    pomIncludeRepository := (_ => false),
    publishTo := Some(Resolver.file("txstate-publish-dir", publishDir((ThisBuild / baseDirectory).value))(
      Resolver.mavenStylePatterns)),
    publish / checksums := Seq("sha1", "md5"),
    // A rebuilt jar of the same version replaces the one published before (a local layout, not a release).
    publishConfiguration := publishConfiguration.value.withOverwrite(true),
    pomPostProcess := { (pom: Node) =>
      new RuleTransformer(new RewriteRule {
        override def transform(node: Node): Seq[Node] = node match {
          case e: Elem if e.label == "dependencies" => <dependencies>{providedDependencies(line)}</dependencies>
          case other => other
        }
      }).transform(pom).head
    }
  )

  private def providedDependencies(line: SparkLine): Seq[Node] = Seq(
    ("org.apache.spark", s"spark-sql_${line.scalaBinary}", line.sparkVersion),
    ("org.apache.hadoop", "hadoop-client-api", line.hadoop),
    ("org.scala-lang", "scala-library", line.scala),
    ("org.rocksdb", "rocksdbjni", line.rocksdb)).map { case (group, artifact, version) =>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
      <scope>provided</scope>
    </dependency>
  }
}
