// txstate-spark: the JVM half of the product, one jar per Spark line (project/spark-lines.tsv).
//
// The engine, checkpoint and store code is shared (jvm/src/main/scala); each line adds its thin
// adapter from version source folders: `scala-spark-<line>` (that line only),
// `scala-spark-<line>+` (that line and every newer one) and `scala-spark-<line>-` (that line and
// every older one). Each line compiles against that line's
// real Spark: spark-sql from Maven Central, or for 4.3 (not on Maven Central) the jars pyspark
// 4.3.0 ships. Spark and rocksdbjni are Provided: every cluster has them, and JNI classes cannot
// be shaded. One jar per line is required, not a packaging choice: Spark 4.3's provider trait
// carries fields that a class compiled against 4.2 lacks (AbstractMethodError at run time).
//
//   build/sbt package              every line's jar: target/txstate-spark-<line>_2.13-<version>.jar
//   build/sbt spark41/package      one line's jar
//   build/sbt test                 the Scala tests on every line
//   build/sbt conformance42/test   Spark's StateStoreSuiteBase on one line (jvm/src/conformance)

val lines: Seq[SparkLine] = SparkLines.load(file("project/spark-lines.tsv"))
def lineOf(name: String): SparkLine =
  lines.find(_.line == name).getOrElse(sys.error(s"project/spark-lines.tsv has no Spark line $name"))
val newestLine: SparkLine = lines.maxBy(l => SparkLines.order(l.line))

val rocksdbVersion = "9.8.4" // the rocksdbjni every supported Spark line ships
val scalatest = "org.scalatest" %% "scalatest" % "3.2.19"

ThisBuild / organization := "io.github.txstate"
ThisBuild / version := IO.read(file("VERSION")).trim
ThisBuild / scalaVersion := newestLine.scala

// Where pyspark's jars are for lines that are not on Maven Central: $SPARK_JARS_DIR, else the
// project's .venv (made by `make venv`, pyspark==4.3.0). Absolute, because forked test JVMs run in
// their project's own directory.
def pysparkJars(line: SparkLine): Seq[File] = {
  val fromEnv = sys.env.get("SPARK_JARS_DIR").map(file)
  val fromVenv = Option(file(".venv/lib")).filter(_.isDirectory).toSeq
    .flatMap(lib => Option(lib.listFiles).toSeq.flatten)
    .map(_ / "site-packages" / "pyspark" / "jars")
    .find(_.isDirectory)
  val dir = fromEnv.orElse(fromVenv).filter(d => (d / s"spark-sql_2.13-${line.pyspark}.jar").isFile).getOrElse {
    sys.error(
      s"txstate-spark: cannot find the Spark ${line.pyspark} jars to compile the ${line.line} line against. " +
        s"Run `make venv` (it installs pyspark==${line.pyspark} into .venv), or set SPARK_JARS_DIR to a " +
        s"directory holding spark-sql_2.13-${line.pyspark}.jar.")
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
 * The source folders of `line` under `base` that exist: `scala`, `scala-spark-<line>`, every
 * `scala-spark-<L>+` with L at or below `line`, and every `scala-spark-<L>-` with L at or above it.
 */
def versionFolders(base: File, line: SparkLine): Seq[File] =
  ((base / "scala") +: (base / s"scala-spark-${line.line}") +:
    (lines.filter(other => line.atLeast(other.line)).map(other => base / s"scala-spark-${other.line}+") ++
      lines.filter(other => SparkLines.order(other.line) >= SparkLines.order(line.line))
        .map(other => base / s"scala-spark-${other.line}-")))
    .filter(_.isDirectory)

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
  dependencyOverrides += "org.scala-lang" % "scala-library" % line.scala,
  scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Xlint:-unused,_", "-release:17"),
  Test / fork := true,
  Test / parallelExecution := false,
  Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD")
)

def sparkLine(line: SparkLine): Project =
  Project(line.id, file("target") / "lines" / line.line)
    .settings(lineSettings(line))
    .settings(sparkSettings(line, Provided))
    .settings(
      name := s"txstate-spark-${line.line}",
      Compile / unmanagedSourceDirectories := versionFolders((ThisBuild / baseDirectory).value / "jvm/src/main", line),
      Compile / unmanagedResourceDirectories := Seq((ThisBuild / baseDirectory).value / "jvm/src/main/resources"),
      Test / unmanagedSourceDirectories := versionFolders((ThisBuild / baseDirectory).value / "jvm/src/test", line),
      Test / unmanagedResourceDirectories := Seq((ThisBuild / baseDirectory).value / "jvm/src/test/resources"),
      libraryDependencies ++= Seq("org.rocksdb" % "rocksdbjni" % rocksdbVersion % Provided, scalatest % Test),
      // The jar holds our classes only, named for its Spark line.
      Compile / packageBin / artifactPath :=
        (ThisBuild / baseDirectory).value / "target" / s"txstate-spark-${line.line}_2.13-${version.value}.jar",
      Test / javaOptions ++= "-Xmx2g" +: sparkJvmFlags,
      // The release that writes a store is recorded in its commit point (txstate.engine.Release).
      Compile / resourceGenerators += Def.task {
        val file = (Compile / resourceManaged).value / "txstate-release.properties"
        IO.write(file, s"version=${version.value}\n")
        Seq(file)
      }.taskValue
    )

// Spark's own state store conformance suite on one line (`make conformance`): StateStoreSuiteBase
// from that line's spark-sql tests jar, subclassed in jvm/src/conformance. Kept out of the line's own
// tests so the 50 MB tests jars stay off their classpath. Where a line's tests jar is not on Maven
// Central (4.3), the newest that is runs intransitively against the line's own Spark; the tests of
// it that cannot link are excluded by name (ConformanceExclusions, per line).
def conformance(line: SparkLine, main: Project): Project =
  Project("conformance" + line.id.stripPrefix("spark"), file("target") / "conformance" / line.line)
    .dependsOn(main)
    .settings(lineSettings(line))
    .settings(sparkSettings(line, Test))
    .settings(
      name := s"txstate-spark-conformance-${line.line}",
      publish / skip := true,
      Compile / sources := Nil,
      Test / unmanagedSourceDirectories :=
        versionFolders((ThisBuild / baseDirectory).value / "jvm/src/conformance", line),
      Test / unmanagedResourceDirectories := Seq((ThisBuild / baseDirectory).value / "jvm/src/conformance/resources"),
      libraryDependencies ++= Seq("spark-sql", "spark-core", "spark-catalyst").map { artifact =>
        val testsJar = ("org.apache.spark" %% artifact % line.tests % Test).classifier("tests")
        if (line.testsFromOtherRelease) testsJar.intransitive() else testsJar
      },
      libraryDependencies ++= Seq("org.rocksdb" % "rocksdbjni" % rocksdbVersion % Test, scalatest % Test),
      // As Spark's own build runs these tests (without spark.testing two HDFS-suite tests fail on 4.2.0 itself).
      Test / javaOptions ++= Seq("-Xmx3g", "-Dspark.testing=1") ++ sparkJvmFlags,
      Test / envVars += "SPARK_TESTING" -> "1"
    )

lazy val spark40 = sparkLine(lineOf("4.0"))
lazy val spark41 = sparkLine(lineOf("4.1"))
lazy val spark42 = sparkLine(lineOf("4.2"))
// The 4.3 line's tests also run a real NameNode and DataNode (docs/reliability.md, "Distributed file
// systems"): Hadoop's shaded mini cluster, at the Hadoop version pyspark 4.3.0 ships
// (hadoop-client-api/-runtime-3.5.0 in its jars), test-only and intransitive (it builds on those two).
// The test classpath is written to target/dfs-classpath.txt for the pytest fixture that starts the
// cluster as its own JVM (tests/servers/dfs_cluster.py).
val hadoopVersion = "3.5.0"
lazy val dfsClasspath = taskKey[File]("Writes the mini DFS cluster's classpath (4.3 test classes) for tests/servers/dfs_cluster.py")
lazy val spark43 = sparkLine(lineOf("4.3")).settings(
  libraryDependencies += ("org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion % Test).intransitive(),
  dfsClasspath := {
    val out = (ThisBuild / baseDirectory).value / "target" / "dfs-classpath.txt"
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
// S3 under the checkpoint (docs/reliability.md, "S3"): the s3a:// connector (hadoop-aws at the Hadoop
// version pyspark 4.3.0 ships) and a real S3-compatible server (s3proxy), resolved by a project of
// their own so that no other task downloads them: `build/sbt s3Classpath` writes
// target/s3a-classpath.txt (what Spark's driver and executors add) and target/s3proxy-classpath.txt
// (the server's JVM) for tests/servers/s3_server.py. hadoop-aws asks for the AWS SDK's 650 MB bundle; the
// s3 and transfer-manager modules it uses are about 10 MB. Spark's own Netty, HttpClient, Jackson and
// SLF4J stay first: only the SDK's jars and hadoop-aws go on Spark's classpath.
val awsSdkVersion = "2.35.4" // hadoop-project 3.5.0's aws-java-sdk-v2.version
val s3proxyVersion = "4.1.0"
lazy val S3Server = config("s3server")
lazy val s3Classpath = taskKey[Seq[File]]("Writes the s3a connector's and s3proxy's classpaths for tests/servers/s3_server.py")
lazy val s3 = (project in file("target") / "s3")
  .settings(
    name := "txstate-spark-s3-test-deps",
    publish / skip := true,
    Compile / sources := Nil,
    Test / sources := Nil,
    autoScalaLibrary := false,
    ivyConfigurations += S3Server,
    libraryDependencies ++= Seq(
      ("org.apache.hadoop" % "hadoop-aws" % hadoopVersion).intransitive(),
      "software.amazon.awssdk" % "s3" % awsSdkVersion,
      "software.amazon.awssdk" % "s3-transfer-manager" % awsSdkVersion,
      // hadoop-aws links its input streams to it (hadoop-project 3.5.0's version).
      "software.amazon.s3.analyticsaccelerator" % "analyticsaccelerator-s3" % "1.3.1",
      ("org.gaul" % "s3proxy" % s3proxyVersion % S3Server).classifier("jar-with-dependencies").intransitive()
    ),
    s3Classpath := {
      val report = update.value
      val target = (ThisBuild / baseDirectory).value / "target"
      val sdkAndConnector: NameFilter =
        GlobFilter("software.amazon.*") | new ExactFilter("org.reactivestreams") | new ExactFilter("org.apache.hadoop")
      val jar = artifactFilter(`type` = "jar")
      val onSpark = report.select(configurationFilter("compile"), moduleFilter(organization = sdkAndConnector), jar)
      val server = report.select(configurationFilter(S3Server.name), moduleFilter(), jar)
      val written = Seq(target / "s3a-classpath.txt" -> onSpark, target / "s3proxy-classpath.txt" -> server)
      written.foreach { case (file, jars) =>
        IO.write(file, jars.distinct.map(_.getAbsolutePath).mkString(java.io.File.pathSeparator))
      }
      written.map(_._1)
    }
  )
lazy val lineProjects = Map("4.0" -> spark40, "4.1" -> spark41, "4.2" -> spark42, "4.3" -> spark43)

lazy val conformance40 = conformance(lineOf("4.0"), spark40)
lazy val conformance41 = conformance(lineOf("4.1"), spark41)
lazy val conformance42 = conformance(lineOf("4.2"), spark42)
lazy val conformance43 = conformance(lineOf("4.3"), spark43)

// `build/sbt package` / `test` run every line; the root itself holds no code.
lazy val root = (project in file("."))
  .aggregate(spark40, spark41, spark42, spark43)
  .settings(name := "txstate-spark", publish / skip := true, Compile / sources := Nil, Test / sources := Nil)

// Benchmarks (`make bench-store`): txstate against that line's built-in providers in one JVM run.
// The line is $SPARK (default: the newest), as for every make target.
val benchLine: SparkLine = lineOf(sys.env.get("SPARK").filter(_.nonEmpty).getOrElse(newestLine.line))

lazy val benchJavaArgs = taskKey[File]("Writes the flags and classpath that run the benchmarks in a JVM of their own")

lazy val bench = (project in file("bench"))
  .dependsOn(lineProjects(benchLine.line))
  .settings(lineSettings(benchLine))
  .settings(sparkSettings(benchLine, Compile))
  .settings(
    name := "txstate-spark-bench",
    publish / skip := true,
    Compile / unmanagedSourceDirectories := versionFolders(baseDirectory.value / "src" / "main", benchLine),
    scalacOptions := Seq("-deprecation", "-feature", "-release:17"),
    libraryDependencies += "org.rocksdb" % "rocksdbjni" % rocksdbVersion,
    run / fork := true,
    run / connectInput := false,
    run / baseDirectory := (ThisBuild / baseDirectory).value,
    run / javaOptions ++= "-Xmx6g" +: sparkJvmFlags,
    // The JVM flags and classpath that run a benchmark main outside sbt, one line each: the scaling
    // curve starts one JVM per run so that each run's peak RSS is its own (bench/scaling_bench.py).
    benchJavaArgs := {
      val out = (ThisBuild / baseDirectory).value / "target" / "bench-java-args"
      IO.writeLines(out, sparkJvmFlags ++ Seq("-cp", (Runtime / fullClasspath).value.files.mkString(java.io.File.pathSeparator)))
      out
    }
  )
