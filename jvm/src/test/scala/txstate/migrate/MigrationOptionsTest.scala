package txstate.migrate

import org.apache.spark.sql.internal.SQLConf
import org.scalatest.funsuite.AnyFunSuite

/** How users name a migration: the providers by name, the command line and the Python client's JSON. */
final class MigrationOptionsTest extends AnyFunSuite {
  private def refused(args: String*): String =
    intercept[IllegalArgumentException](MigrationOptions.fromArgs(args)).getMessage

  test("providers are chosen by the name users type, in any case, and an unknown name lists the known ones") {
    assert(ProviderChoice.byName("txstate") == ProviderChoice.TxState)
    assert(ProviderChoice.byName(" RocksDB ") == ProviderChoice.RocksDB)
    assert(ProviderChoice.byName("HDFS") == ProviderChoice.Hdfs)
    val e = intercept[IllegalArgumentException](ProviderChoice.byName("memory"))
    assert(e.getMessage == "[TXSTATE_MIGRATION_BAD_ARGUMENT] --to is 'memory'; expected one of txstate, rocksdb, hdfs")
  }

  test("each provider names a class of this Spark line, and the setting and its default are Spark's own") {
    ProviderChoice.all.foreach { p =>
      Class.forName(p.className)
      assert(ProviderChoice.describe(p.className) == p.name)
    }
    assert(ProviderChoice.describe("com.example.OtherProvider") == "com.example.OtherProvider")
    assert(ProviderChoice.settingKey == SQLConf.STATE_STORE_PROVIDER_CLASS.key)
    // An offset entry without the setting runs on Spark's default, which migrate reads as hdfs.
    assert(new SQLConf().getConf(SQLConf.STATE_STORE_PROVIDER_CLASS) == ProviderChoice.Hdfs.className)
  }

  test("the command line takes the checkpoint and every flag in any order, with documented defaults") {
    val all = MigrationOptions.fromArgs(Seq("--to", "rocksdb", "/ck", "--partitions", "8", "--dry-run",
      "--active-window", "0", "--rollback-uncommitted"))
    assert(all == MigrationOptions("/ck", Some("rocksdb"), Some(8), dryRun = true, activeWindowSeconds = 0,
      rollbackUncommitted = true))
    assert(all.destination == ProviderChoice.RocksDB)
    val undo = MigrationOptions.fromArgs(Seq("/ck", "--undo"))
    assert(undo == MigrationOptions("/ck", None, undo = true))
    assert(undo.activeWindowSeconds == 60 && undo.partitions.isEmpty && !undo.dryRun)
  }

  test("a bad command line names its problem and shows the usage") {
    Seq(
      Seq("--to", "txstate") -> "CHECKPOINT is missing",
      Seq("/ck", "--to") -> "unknown or incomplete option '--to'",
      Seq("/ck", "--force") -> "unknown or incomplete option '--force'",
      Seq("/ck", "/other") -> "unexpected argument '/other'",
      Seq("/ck", "--partitions", "-2") -> "--partitions needs a non-negative number, got '-2'",
      Seq("/ck", "--active-window", "soon") -> "--active-window needs a non-negative number, got 'soon'"
    ).foreach { case (args, problem) =>
      val message = refused(args: _*)
      assert(message.startsWith(s"[TXSTATE_MIGRATION_BAD_ARGUMENT] the command line $problem"), message)
      assert(message.endsWith(s"usage: ${MigrationOptions.usage}"), message)
    }
  }

  test("a partition count beyond an Int is refused, never wrapped around to a small count") {
    // 2^32 + 2 wraps to 2 as an Int: the migration would silently rescale to 2 partitions.
    val expected = "[TXSTATE_MIGRATION_BAD_ARGUMENT] --partitions must be between 1 and 100000, got 4294967298"
    assert(refused("/ck", "--to", "hdfs", "--partitions", "4294967298") == expected)
    val e = intercept[IllegalArgumentException](
      MigrationOptions.fromJson("""{"checkpoint": "/ck", "to": "hdfs", "partitions": 4294967298}"""))
    assert(e.getMessage == expected)
  }

  test("without --to there is no destination, and the error says which names to use") {
    val e = intercept[IllegalArgumentException](MigrationOptions("/ck", None).destination)
    assert(e.getMessage == "[TXSTATE_MIGRATION_BAD_ARGUMENT] --to is required (txstate, rocksdb or hdfs)")
  }

  test("the Python client's JSON reads like the command line, with the same defaults") {
    val all = MigrationOptions.fromJson("""{"checkpoint": "/ck", "to": "hdfs", "partitions": 3, "dryRun": true,
      "undo": false, "activeWindowSeconds": 5, "rollbackUncommitted": true}""")
    assert(all == MigrationOptions("/ck", Some("hdfs"), Some(3), dryRun = true, activeWindowSeconds = 5,
      rollbackUncommitted = true))
    assert(MigrationOptions.fromJson("""{"checkpoint": "/ck", "to": null, "partitions": null}""") ==
      MigrationOptions("/ck", None))
    val missing = intercept[IllegalArgumentException](MigrationOptions.fromJson("""{"to": "hdfs"}"""))
    assert(missing.getMessage == "[TXSTATE_MIGRATION_BAD_ARGUMENT] checkpoint is required")
    val notText = intercept[IllegalArgumentException](MigrationOptions.fromJson("""{"checkpoint": 7}"""))
    assert(notText.getMessage.startsWith("[TXSTATE_MIGRATION_BAD_ARGUMENT] checkpoint must be a string"))
  }
}
