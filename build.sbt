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
// The line projects (`spark40`, ...) and their conformance projects (`conformance40`, ...) are
// generated from the table by project/LineProjects.scala; this file holds what is not per line.
//
//   build/sbt package              every line's jar: target/txstate-spark-<line>_<scala>-<version>.jar
//   build/sbt spark41/package      one line's jar
//   build/sbt test                 the Scala tests on every line
//   build/sbt conformance42/test   Spark's StateStoreSuiteBase on one line (jvm/src/conformance)
//   build/sbt spark43/publish      one line's Maven artifacts into $TXSTATE_PUBLISH_DIR (default target/maven-repo;
//                                  `make publish-local DIR=...`, project/Publishing.scala)
//   build/sbt consumer43/test      a user's build compiling against the published 4.3 artifact (project/ConsumerProjects.scala)

import LineProjects.{lines, lineOf, newestLine, hadoopVersion, sparkJvmFlags, versionFolders, sparkSettings,
  lineSettings}

// One forked test JVM per core: two lines' Scala tests run at once on two cores. sbt's default
// restrictions allow one forked test group at a time, and adding a limit only narrows them, so the
// whole set is replaced (with sbt's other two defaults kept). More test JVMs than cores starve each
// other's threads for whole seconds, unfair to the tests that wait on another thread's work.
val cores = java.lang.Runtime.getRuntime.availableProcessors.max(1)
Global / concurrentRestrictions := Seq(Tags.limitAll(cores), Tags.limit(Tags.ForkedTestGroup, cores),
  Tags.exclusiveGroup(Tags.Clean))

ThisBuild / organization := "io.github.txstate"
ThisBuild / version := IO.read(file("VERSION")).trim
ThisBuild / scalaVersion := newestLine.scala

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
// `build/sbt package` / `test` run every line of the table; the root itself holds no code.
lazy val root = (project in file("."))
  .aggregate(lines.map(line => LocalProject(line.id): ProjectReference): _*)
  .settings(name := "txstate-spark", publish / skip := true, Compile / sources := Nil, Test / sources := Nil)

// Benchmarks (`make bench-store`): txstate against that line's built-in providers in one JVM run.
// The line is $SPARK (default: the newest), as for every make target.
val benchLine: SparkLine = lineOf(sys.env.get("SPARK").filter(_.nonEmpty).getOrElse(newestLine.line))

lazy val benchJavaArgs = taskKey[File]("Writes the flags and classpath that run the benchmarks in a JVM of their own")

lazy val bench = (project in file("bench"))
  .dependsOn(LocalProject(benchLine.id))
  .settings(lineSettings(benchLine))
  .settings(sparkSettings(benchLine, Compile))
  .settings(
    name := "txstate-spark-bench",
    publish / skip := true,
    Compile / unmanagedSourceDirectories := versionFolders(baseDirectory.value / "src" / "main", benchLine),
    scalacOptions := Seq("-deprecation", "-feature", "-release", benchLine.release.toString),
    libraryDependencies += "org.rocksdb" % "rocksdbjni" % benchLine.rocksdb,
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
