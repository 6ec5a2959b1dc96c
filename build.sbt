// txstate-spark: one sbt module, the JVM half of the product.
//
// Spark 4.3.0 is not published to Maven Central, but `pyspark==4.3.0` ships every Spark jar.
// We compile against exactly those jars (Provided: Spark brings them at run time), so the
// classes we build against are the classes we run on. rocksdbjni comes from Maven Central at the
// version those jars carry (JNI classes cannot be shaded, so it stays Provided too).

import java.nio.file.Files
import scala.jdk.CollectionConverters._

val sparkVersion = "4.3.0"
val rocksdbVersion = "9.8.4" // the rocksdbjni inside pyspark 4.3.0's jars/

// Where the pyspark 4.3.0 jars are: $SPARK_JARS_DIR, else the project's .venv (made by `make venv`).
lazy val sparkJarsDir: File = {
  val fromEnv = sys.env.get("SPARK_JARS_DIR").map(file)
  val fromVenv = Option(file(".venv/lib")).filter(_.isDirectory).toSeq
    .flatMap(lib => Option(lib.listFiles).toSeq.flatten)
    .map(_ / "site-packages" / "pyspark" / "jars")
    .find(_.isDirectory)
  fromEnv.orElse(fromVenv).filter(dir => (dir / s"spark-sql_2.13-$sparkVersion.jar").isFile).getOrElse {
    sys.error(
      s"txstate-spark: cannot find the Spark $sparkVersion jars to compile against. " +
        "Run `make venv` (it installs pyspark==4.3.0 into .venv), or set SPARK_JARS_DIR to a " +
        s"directory holding spark-sql_2.13-$sparkVersion.jar.")
  }
}

// The Scala library comes from sbt (same version); rocksdbjni from Maven Central.
def isSparkProvidedJar(f: File): Boolean = {
  val n = f.getName
  n.endsWith(".jar") && !n.startsWith("scala-library-") && !n.startsWith("scala-compiler-") &&
    !n.startsWith("rocksdbjni-")
}

ThisBuild / organization := "io.github.txstate"
ThisBuild / version := IO.read(file("VERSION")).trim
ThisBuild / scalaVersion := "2.13.18" // what Spark 4.3.0 ships

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

lazy val sparkJars = sparkJarsDir.listFiles.toSeq.filter(isSparkProvidedJar).sorted.map(Attributed.blank)

lazy val root = (project in file("."))
  .settings(
    name := "txstate-spark",
    Compile / scalaSource := baseDirectory.value / "jvm" / "src" / "main" / "scala",
    Compile / resourceDirectory := baseDirectory.value / "jvm" / "src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "jvm" / "src" / "test" / "scala",
    Test / resourceDirectory := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Xlint:-unused,_", "-release:17"),
    libraryDependencies ++= Seq(
      "org.rocksdb" % "rocksdbjni" % rocksdbVersion % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    Compile / unmanagedJars ++= sparkJars,
    // The jar we ship holds our classes only; Spark and RocksDB are on every cluster already.
    Compile / packageBin / artifactPath := target.value / s"txstate-spark_2.13-${version.value}.jar",
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= "-Xmx2g" +: sparkJvmFlags,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD")
  )

// Benchmarks (`make bench`, `make bench-quick`): txstate against Spark's built-in providers in one JVM run.
lazy val bench = (project in file("bench"))
  .dependsOn(root)
  .settings(
    name := "txstate-spark-bench",
    publish / skip := true,
    Compile / scalaSource := baseDirectory.value / "src" / "main" / "scala",
    scalacOptions ++= Seq("-deprecation", "-feature", "-release:17"),
    libraryDependencies += "org.rocksdb" % "rocksdbjni" % rocksdbVersion,
    Compile / unmanagedJars ++= sparkJars,
    run / fork := true,
    run / connectInput := false,
    run / baseDirectory := (ThisBuild / baseDirectory).value,
    run / javaOptions ++= "-Xmx6g" +: sparkJvmFlags
  )

// Spark's own state store conformance suite (`make conformance`, `build/sbt conformance/test`):
// StateStoreSuiteBase from spark-sql's tests jar, run against our provider (jvm/src/conformance).
// Not aggregated by root, so `build/sbt test` does not run it. 4.3.0's tests jars are not on Maven
// Central, so this runs the newest that is (4.2.0), intransitive: the Spark classes themselves stay
// pyspark 4.3.0's. Tests of that jar that cannot link against 4.3.0 are excluded by name
// (ConformanceExclusions.scala). Spark's build also puts scalacheck and mockito on its test classpath;
// this suite (and Spark's HDFS suite, tried the same way) runs without them.
val sparkTestsVersion = "4.2.0"

lazy val conformance = (project in file("target/conformance"))
  .dependsOn(root)
  .settings(
    name := "txstate-spark-conformance",
    publish / skip := true,
    Compile / sources := Nil,
    Test / scalaSource := (ThisBuild / baseDirectory).value / "jvm" / "src" / "conformance" / "scala",
    Test / resourceDirectory := (ThisBuild / baseDirectory).value / "jvm" / "src" / "conformance" / "resources",
    scalacOptions ++= Seq("-deprecation", "-feature", "-release:17"),
    libraryDependencies ++= Seq("spark-sql", "spark-core", "spark-catalyst").map(artifact =>
      ("org.apache.spark" %% artifact % sparkTestsVersion % Test).classifier("tests").intransitive()),
    libraryDependencies ++= Seq(
      "org.rocksdb" % "rocksdbjni" % rocksdbVersion % Test,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    // Absolute paths: the forked test JVM runs in this project's base directory.
    Test / unmanagedJars ++= sparkJars.map(jar => Attributed.blank(jar.data.getAbsoluteFile)),
    Test / fork := true,
    Test / parallelExecution := false,
    // As Spark's own build runs these tests (without spark.testing two HDFS-suite tests fail on 4.2.0 itself).
    Test / javaOptions ++= Seq("-Xmx3g", "-Dspark.testing=1") ++ sparkJvmFlags,
    Test / envVars += "SPARK_TESTING" -> "1",
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD")
  )
