package txstate.serve

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

/** The serving process's command line, token and settings, checked before anything starts (docs/serving.md). */
final class ServeOptionsTest extends AnyFunSuite {
  private def refused(args: String*): String = intercept[IllegalArgumentException](ServeOptions.parse(args)).getMessage

  test("defaults: loopback, the default store, every partition, the documented limits") {
    val o = ServeOptions.parse(Seq("/chk", "--operator", "0"))
    assert(o == ServeOptions("/chk", "0"))
    assert(o.host == "127.0.0.1" && o.maxRequestBytes == (1L << 20) && o.maxPage == 10000 && o.maxConcurrent == 16)
  }

  test("every option is read into its typed field") {
    val o = ServeOptions.parse(Seq("/chk", "--operator", "dedupe", "--store", "left", "--partitions", "0, 2",
      "--host", "::1", "--port", "0", "--max-page", "50", "--max-concurrent", "1", "--max-request-bytes", "4096",
      "--poll-interval-ms", "25", "--conf", "spark.hadoop.fs.s3a.endpoint=http://x=y",
      "--conf", "spark.sql.streaming.stateStore.txstate.blockCacheSizeMB=16"))
    assert(o.operator == "dedupe" && o.store == "left" && o.partitions.contains(Seq(0, 2)) && o.port == 0)
    assert(o.maxPage == 50 && o.maxConcurrent == 1 && o.maxRequestBytes == 4096 && o.pollIntervalMs == 25)
    assert(o.conf == Seq("spark.hadoop.fs.s3a.endpoint" -> "http://x=y",
      "spark.sql.streaming.stateStore.txstate.blockCacheSizeMB" -> "16"))
  }

  test("a bad argument is refused by name, with what is expected") {
    assert(refused("--operator", "0").contains("CHECKPOINT"))
    assert(refused("/chk").contains("--operator"))
    assert(refused("/chk", "--operator", "0", "--port", "http").contains("--port: expected a whole number, got 'http'"))
    assert(refused("/chk", "--operator", "0", "--port", "70000").contains("--port: must be between 0 and 65535"))
    assert(refused("/chk", "--operator", "0", "--max-page", "200000").contains("--max-page"))
    assert(refused("/chk", "--operator", "0", "--partitions", "0,a").contains("--partitions"))
    assert(refused("/chk", "--operator", "0", "--token", "secret").contains("--token: unknown option"))
    assert(refused("/chk", "--operator", "0", "--port").contains("--port: needs a value"))
    assert(refused("/chk", "--operator", "0", "--conf", "spark.sql.shuffle.partitions=4")
      .contains("spark.sql.shuffle.partitions is not read by the serving process"))
    assert(refused("/chk", "/other", "--operator", "0").contains("a second CHECKPOINT"))
    assert(refused("/chk", "--operator", "0", "--port", "1", "--port", "2").contains("--port: given twice"))
  }

  test("off loopback a token is required; from a file or the environment, and never shown") {
    val open = ServeOptions.parse(Seq("/chk", "--operator", "0", "--host", "0.0.0.0"))
    val e = intercept[IllegalArgumentException](Auth.token(open, Map.empty))
    assert(e.getMessage.startsWith("[TXSTATE_SERVE_TOKEN_REQUIRED]") && e.getMessage.contains("--token-file"))
    assert(Auth.token(open.copy(host = "127.0.0.1"), Map.empty).isEmpty)
    assert(Auth.token(open.copy(host = "localhost"), Map.empty).isEmpty)

    val fromEnv = Auth.token(open, Map(ServeOptions.tokenEnv -> "env-secret")).get
    assert(fromEnv.accepts(Some("Bearer env-secret")) && fromEnv.accepts(Some("bearer  env-secret ")))
    assert(!fromEnv.accepts(Some("Bearer env-secreT")) && !fromEnv.accepts(Some("env-secret")))
    assert(!fromEnv.accepts(Some("Basic env-secret")) && !fromEnv.accepts(None))
    assert(!fromEnv.toString.contains("env-secret"))

    val file = Files.createTempFile("txstate-token", "")
    try {
      Files.write(file, "file-secret\nignored\n".getBytes(UTF_8))
      val fromFile = Auth.token(open.copy(tokenFile = Some(file.toString)), Map(ServeOptions.tokenEnv -> "env-secret")).get
      assert(fromFile.accepts(Some("Bearer file-secret")) && !fromFile.accepts(Some("Bearer env-secret")))
      Files.write(file, "  \n".getBytes(UTF_8))
      val empty = intercept[IllegalArgumentException](Auth.token(open.copy(tokenFile = Some(file.toString)), Map.empty))
      assert(empty.getMessage.startsWith("[TXSTATE_SERVE_TOKEN_EMPTY]"))
    } finally Files.delete(file)
    val missing = intercept[IllegalArgumentException](Auth.token(open.copy(tokenFile = Some("/no/such/token")), Map.empty))
    assert(missing.getMessage.contains("--token-file /no/such/token"))
  }

  test("an unknown txstate setting is refused as a writer refuses it, before any follower starts") {
    val options = ServeOptions.parse(Seq("/no/such/checkpoint", "--operator", "0",
      "--conf", "spark.sql.streaming.stateStore.txstate.blockCacheSizeMb=16"))
    val e = intercept[IllegalArgumentException](ServeMain.start(options, Map.empty))
    assert(e.getMessage.startsWith("[TXSTATE_INVALID_SETTING]") && e.getMessage.contains("blockCacheSizeMb"))
  }

  test("a keystore needs its password in the environment") {
    val options = ServeOptions.parse(Seq("/chk", "--operator", "0", "--keystore", "/no/such.p12"))
    val e = intercept[IllegalArgumentException](ServeMain.start(options, Map.empty))
    assert(e.getMessage.contains(ServeOptions.keystorePasswordEnv))
    val missing = intercept[IllegalArgumentException](ServeMain.start(options, Map(ServeOptions.keystorePasswordEnv -> "pw")))
    assert(missing.getMessage.contains("--keystore /no/such.p12 cannot be used: no such file"))
  }
}
