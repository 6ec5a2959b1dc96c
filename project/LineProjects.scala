import sbt._
import sbt.Keys._

/**
 * The sbt projects of every Spark line, generated from project/spark-lines.tsv: for each row a
 * line project (`spark40`, ... : that line's jar and Scala tests) and a conformance project
 * (`conformance40`, ...: Spark's StateStoreSuiteBase against it). A new Spark line is one row of
 * the table plus its version source folders; nothing here or in build.sbt names a line.
 *
 * sbt finds projects only as `lazy val`s of build.sbt or as a plugin's `extraProjects`, so the
 * generated ones come from this plugin; build.sbt refers to them with `LocalProject(line.id)`.
 */
object LineProjects extends AutoPlugin {
  override def trigger = allRequirements

  /** The lines `build/sbt package`/`test`, the Makefile, the wheel and CI build and test. */
  val lines: Seq[SparkLine] = SparkLines.load(file("project/spark-lines.tsv"))
  /** Lines under way: their projects exist (`build/sbt spark35_212/test`), nothing aggregates them. */
  val previewLines: Seq[SparkLine] = SparkLines.load(file("project/spark-lines-preview.tsv"))
  private val allLines = lines ++ previewLines
  /**
   * The row `name` selects, as the Makefile's SPARK_ROW does: a row's key ("4.0", "3.5_2.13"), else
   * the row of that line that pyspark ships ("3.5" is 3.5_2.12: 3.5_2.13 has no pyspark).
   */
  def lineOf(name: String): SparkLine =
    lines.find(_.key == name)
      .orElse(lines.find(l => l.line == name && l.pyspark != "-"))
      .getOrElse(sys.error(s"project/spark-lines.tsv has no Spark line $name"))
  val newestLine: SparkLine = lines.maxBy(l => SparkLines.order(l.line))
  val scalatest = "org.scalatest" %% "scalatest" % "3.2.19"
  // The Hadoop version pyspark of the newest line ships (hadoop-client-api/-runtime in its jars).
  val hadoopVersion: String = newestLine.hadoop

  lazy val dfsClasspath = taskKey[File]("Writes the mini DFS cluster's classpath (newest line's test classes) for tests/servers/dfs_cluster.py")

  override def extraProjects: Seq[Project] =
    allLines.flatMap(line => Seq(lineProject(line), conformanceProject(line), ConsumerProjects.consumerProject(line)))

  // Where pyspark's jars are for lines that are not on Maven Central: $SPARK_JARS_DIR, else the
  // project's .venv (made by `make venv`). Absolute, because forked test JVMs run in their
  // project's own directory.
  def pysparkJars(line: SparkLine): Seq[File] = {
    val fromEnv = sys.env.get("SPARK_JARS_DIR").map(file)
    val fromVenv = Option(file(".venv/lib")).filter(_.isDirectory).toSeq
      .flatMap(lib => Option(lib.listFiles).toSeq.flatten)
      .map(_ / "site-packages" / "pyspark" / "jars")
      .find(_.isDirectory)
    val sparkSql = s"spark-sql_${line.scalaBinary}-${line.pyspark}.jar"
    val dir = fromEnv.orElse(fromVenv).filter(d => (d / sparkSql).isFile).getOrElse {
      sys.error(
        s"txstate-spark: cannot find the Spark ${line.pyspark} jars to compile the ${line.line} line against. " +
          s"Run `make venv` (it installs pyspark==${line.pyspark} into .venv), or set SPARK_JARS_DIR to a " +
          s"directory holding $sparkSql.")
    }
    // The Scala library comes from sbt (same version); rocksdbjni from Maven Central.
    dir.getAbsoluteFile.listFiles.toSeq.filter { f =>
      val n = f.getName
      n.endsWith(".jar") && !n.startsWith("scala-library-") && !n.startsWith("scala-compiler-") &&
        !n.startsWith("scala-reflect-") && !n.startsWith("rocksdbjni-")
    }.sorted
  }

  // What Spark 4 needs to run on JDK 17 (the same flags spark-submit passes).
  lazy val sparkJvmFlags = Seq(
    "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
    "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
    "-Djdk.reflect.useDirectMethodHandle=false",
    "-Dio.netty.tryReflectionSetAccessible=true")

  /**
   * The source folders of `line` under `base` that exist: `scala`, `scala-<scala binary>` (what
   * differs by Scala version: 2.12 lacks some of 2.13's library), `scala-spark-<line>`, every
   * `scala-spark-<L>+` with L at or below `line`, and every `scala-spark-<L>-` with L at or above it.
   */
  def versionFolders(base: File, line: SparkLine): Seq[File] = {
    val sparkLines = allLines.map(_.line).distinct
    ((base / "scala") +: (base / s"scala-${line.scalaBinary}") +: (base / s"scala-spark-${line.line}") +:
      (sparkLines.filter(other => line.atLeast(other)).map(other => base / s"scala-spark-$other+") ++
        sparkLines.filter(other => SparkLines.order(other) >= SparkLines.order(line.line)).map(other => base / s"scala-spark-$other-")))
      .filter(_.isDirectory)
  }

  /** The compiler's options for `line`: its Scala version's spelling of the same checks, its Java release. */
  def scalacFlags(line: SparkLine): Seq[String] = {
    // Unused imports fail the build (they hid in the per-line files); the rest of -Xlint warns.
    val lint = if (line.scalaBinary == "2.12") Seq("-Xlint:-unused,_", "-Ywarn-unused:imports")
      else Seq("-Xlint:-unused,_", "-Wunused:imports")
    Seq("-deprecation", "-feature", "-unchecked") ++ lint ++ Seq("-Wconf:cat=unused-imports:e", "-release", line.release.toString)
  }

  // The tests of what 3.5 lacks: column families, Spark's error classes (SparkContractTest asserts them
  // through SparkThrowable.getCondition, which 3.5 lacks with the error factories), range scans (with
  // prefix scans in one file), and Spark 4's operator metadata files (SparkFilesTest reads them back).
  private def testsOfWhatALineLacks(line: SparkLine): Seq[String] =
    if (line.atLeast("4.0")) Nil
    else Seq("txstate/spark/TxStateStoreColumnFamiliesTest.scala", "txstate/spark/SparkContractTest.scala",
      "txstate/spark/TxStateStoreScanTest.scala", "txstate/migrate/SparkFilesTest.scala")

  // The engine's suites (txstate.engine: RocksDB, Scala and the JDK; no Spark, no Hadoop) run on the
  // oldest row (RocksDB 8, Scala 2.12, Java 8) and the newest (RocksDB 9, Scala 2.13): each row between
  // has its RocksDB, its Java library (txstate.compat) and its Scala version in common with one of the
  // two. The store's and checkpoint's suites run everywhere: they write through each Spark's
  // CheckpointFileManager. The store's stress (txstate.store.stress: a time budget, not a fixed set of
  // cases) runs on those two rows too, inside `sbt test`; `make stress` runs it longer on the newest.
  private def runsEngineSuites(line: SparkLine): Boolean = line == lines.head || line == newestLine

  private def without(files: Seq[File], paths: Seq[String]): Seq[File] =
    files.filterNot(f => paths.exists(path => f.getAbsolutePath.replace('\\', '/').contains("/" + path)))

  /** Spark itself, for compiling (Provided) and for the tests of `line`. */
  def sparkSettings(line: SparkLine, config: Configuration): Seq[Setting[_]] = line.compile match {
    case Some(version) => Seq(libraryDependencies += "org.apache.spark" %% "spark-sql" % version % config)
    case None if config == Test => Seq(Test / unmanagedJars ++= pysparkJars(line).map(Attributed.blank))
    case None => Seq(Compile / unmanagedJars ++= pysparkJars(line).map(Attributed.blank))
  }

  def lineSettings(line: SparkLine): Seq[Setting[_]] = Seq(
    scalaVersion := line.scala,
    // Coursier would let a Spark dependency pull a newer scala-library than that Spark ships (4.1.3's
    // jackson-module-scala asks for 2.13.18); code compiled against it could fail on the cluster.
    dependencyOverrides ++= Seq("scala-library", "scala-reflect").map(m => "org.scala-lang" % m % line.scala),
    scalacOptions ++= scalacFlags(line),
    javacOptions ++= Seq("--release", line.release.toString),
    Test / fork := true,
    Test / parallelExecution := false,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD")
  )

  private def repoDir = Def.setting((ThisBuild / baseDirectory).value)

  def lineProject(line: SparkLine): Project = {
    val project = Project(line.id, file("target") / "lines" / line.folder)
      .settings(lineSettings(line))
      .settings(sparkSettings(line, Provided))
      .settings(
        name := s"txstate-spark-${line.key}",
        Compile / unmanagedSourceDirectories := versionFolders(repoDir.value / "jvm/src/main", line),
        Compile / unmanagedResourceDirectories := Seq(repoDir.value / "jvm/src/main/resources"),
        Test / unmanagedSourceDirectories := versionFolders(repoDir.value / "jvm/src/test", line),
        Test / unmanagedResourceDirectories := Seq(repoDir.value / "jvm/src/test/resources"),
        Test / unmanagedSources := without((Test / unmanagedSources).value, testsOfWhatALineLacks(line)),
        Test / testOptions ++= (if (runsEngineSuites(line)) Nil
          else Seq(Tests.Filter(suite => !suite.startsWith("txstate.engine.") && !suite.startsWith("txstate.store.stress.")))),
        libraryDependencies ++= Seq("org.rocksdb" % "rocksdbjni" % line.rocksdb % Provided, scalatest % Test),
        // The jar holds our classes only, named for its Spark line and Scala version.
        Compile / packageBin / artifactPath := repoDir.value / "target" / line.jarName(version.value),
        Test / javaOptions ++= "-Xmx2g" +: sparkJvmFlags,
        // The release and Spark line that write a store are recorded in its commit points (txstate.engine.Release).
        Compile / resourceGenerators += Def.task {
          val file = (Compile / resourceManaged).value / "txstate-release.properties"
          IO.write(file, s"version=${version.value}\nspark=${line.line}\n")
          Seq(file)
        }.taskValue,
        // The settings' specification, one file for both halves: the wheel ships it beside the Python
        // package that reads it, the jar a copy made here (txstate.spark.SettingSpec reads it).
        Compile / resourceGenerators += Def.task {
          val spec = (Compile / resourceManaged).value / "txstate-settings.json"
          IO.copyFile(repoDir.value / "python/txstate_spark/settings/settings.json", spec)
          Seq(spec)
        }.taskValue
      )
    val published = project.settings(Publishing.settings(line))
    if (line == newestLine) published.settings(dfsSettings) else published
  }

  // The newest line's tests also run a real NameNode and DataNode (docs/reliability.md, "Distributed
  // file systems"): Hadoop's shaded mini cluster, at the Hadoop version that line's pyspark ships,
  // test-only and intransitive (it builds on Spark's hadoop-client jars). The code under test is
  // shared, so one line runs it. The test classpath is written to target/dfs-classpath.txt for the
  // pytest fixture that starts the cluster as its own JVM (tests/servers/dfs_cluster.py).
  private def dfsSettings: Seq[Setting[_]] = Seq(
    libraryDependencies += ("org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion % Test).intransitive(),
    dfsClasspath := {
      val out = repoDir.value / "target" / "dfs-classpath.txt"
      // The test classes' folder and what the cluster needs: Hadoop's client and mini cluster jars, Scala,
      // logging (not fullClasspath: that runs Test / compile; and Spark's 250 jars slow the JVM down).
      val needed = "^(hadoop-client-|scala-library-|log4j-|slf4j-|jcl-over-slf4j-).*\\.jar$".r
      val entries = (Test / classDirectory).value +:
        (Test / dependencyClasspath).value.map(_.data).filter(f => needed.findFirstIn(f.getName).isDefined)
      IO.write(out, entries.map(_.getAbsolutePath).mkString(java.io.File.pathSeparator))
      out
    },
    Test / compile := (Test / compile).dependsOn(dfsClasspath).value
  )

  // Spark's own state store conformance suite on one line (`make conformance`): StateStoreSuiteBase
  // from that line's spark-sql tests jar, subclassed in jvm/src/conformance. Kept out of the line's own
  // tests so the 50 MB tests jars stay off their classpath. Where a line's tests jar is not on Maven
  // Central, the newest that is runs intransitively against the line's own Spark; the tests of it
  // that cannot link are excluded by name (ConformanceExclusions, per line).
  def conformanceProject(line: SparkLine): Project =
    Project(line.conformanceId, file("target") / "conformance" / line.folder)
      .dependsOn(LocalProject(line.id))
      .settings(lineSettings(line))
      .settings(sparkSettings(line, Test))
      .settings(
        name := s"txstate-spark-conformance-${line.key}",
        publish / skip := true,
        Compile / sources := Nil,
        Test / unmanagedSourceDirectories := versionFolders(repoDir.value / "jvm/src/conformance", line),
        Test / unmanagedResourceDirectories := Seq(repoDir.value / "jvm/src/conformance/resources"),
        libraryDependencies ++= Seq("spark-sql", "spark-core", "spark-catalyst").map { artifact =>
          val testsJar = ("org.apache.spark" %% artifact % line.tests % Test).classifier("tests")
          if (line.testsFromOtherRelease) testsJar.intransitive() else testsJar
        },
        libraryDependencies ++= Seq("org.rocksdb" % "rocksdbjni" % line.rocksdb % Test, scalatest % Test),
        // As Spark's own build runs these tests (without spark.testing two HDFS-suite tests fail on 4.2.0 itself).
        Test / javaOptions ++= Seq("-Xmx3g", "-Dspark.testing=1") ++ sparkJvmFlags,
        Test / envVars += "SPARK_TESTING" -> "1"
      )
}
