package txstate.spark

import java.io.File
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.KilledLockHolder
import txstate.store.FileDamage

/**
 * The corruption matrix's rows for the files the adapter writes (docs/reliability.md, "Corruption
 * matrix"): the store schema file beside the checkpoint and the `.lock` file of a stable local
 * directory. Each damage is followed by what would meet it: a reader without a provider (an
 * interactive query), then a provider opening the store again, whose state must stay exact.
 */
final class AdapterFileDamageTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = StructType(Seq(StructField("name", StringType)))
  private val valueSchema = StructType(Seq(StructField("count", LongType)))
  private val olderValueSchema = StructType(Seq(StructField("count", IntegerType)))
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)
  private val model = Map("a" -> 1L, "b" -> 2L, "c" -> 3L)

  /** Version 1 holds `model`; before it, a provider with an older value schema wrote the schema file. */
  private def writeStore(root: String, localDir: File): Array[Byte] = {
    withProvider(newProvider(root, keySchema, olderValueSchema, localDir = localDir))(_.getStore(0).abort())
    val older = Files.readAllBytes(schemaFile(root).toPath)
    withProvider(newProvider(root, keySchema, valueSchema, localDir = localDir)) { p =>
      val s = p.getStore(0)
      model.foreach { case (k, v) => s.put(key(k), value(v), default) }
      assert(s.commit() == 1)
    }
    older
  }

  private def schemaFile(root: String): File = new File(StoreSchemaFile.path(root, 0L, default).toUri)

  private def readSchema(root: String): Option[StoreSchema] = StoreSchemaFile.load(root, 0L, default, new Configuration())

  private def stateOf(root: String, localDir: File): Map[String, Long] =
    withProvider(newProvider(root, keySchema, valueSchema, localDir = localDir)) { p =>
      val s = p.getStore(1)
      try pairs(s.iterator(default), keySchema, valueSchema).map { case (k, v) =>
        k(0).asInstanceOf[String] -> v(0).asInstanceOf[Long]
      }.toMap
      finally s.abort()
    }

  /** What a reader without a provider meets: the schema as written, no schema at all, or an error naming the file. */
  private sealed trait ReaderOutcome
  private case object FindsNoSchema extends ReaderOutcome
  private case object FailsNamingTheFile extends ReaderOutcome
  /** Not detected: a valid older schema file is read as it is (docs/reliability.md, "Corruption matrix", gaps). */
  private case object ReadsTheOlderSchema extends ReaderOutcome

  /** With Hadoop's `.crc` side file (local and Hadoop file systems) and without (object stores). */
  private val readerExpects: Map[(Boolean, FileDamage), ReaderOutcome] = Map(
    (true, FileDamage.FlipByte) -> FailsNamingTheFile,
    (true, FileDamage.Truncate) -> FailsNamingTheFile,
    (true, FileDamage.Delete) -> FindsNoSchema,
    (true, FileDamage.OlderCopy) -> FailsNamingTheFile,
    (true, FileDamage.ZeroLength) -> FailsNamingTheFile,
    (false, FileDamage.FlipByte) -> FailsNamingTheFile,
    (false, FileDamage.Truncate) -> FailsNamingTheFile,
    (false, FileDamage.Delete) -> FindsNoSchema,
    (false, FileDamage.OlderCopy) -> ReadsTheOlderSchema,
    (false, FileDamage.ZeroLength) -> FailsNamingTheFile)

  for (sideFile <- Seq(true, false); damage <- FileDamage.all) {
    val where = if (sideFile) "with Hadoop's .crc side file" else "without a side file"
    test(s"store schema file $where: $damage -> a reader ${readerExpects((sideFile, damage))}; " +
        "the next provider rewrites it, state exact") {
      val root = newCheckpointRoot()
      val localDir = newTempDir("local")
      val older = writeStore(root, localDir)
      val file = schemaFile(root)
      val written = readSchema(root)
      assert(written.exists(s => s.keySchema == keySchema && s.valueSchema == valueSchema))
      if (!sideFile) Files.delete(new File(file.getParentFile, s".${file.getName}.crc").toPath)
      damage(file, older)

      val read = try Right(readSchema(root)) catch { case e: Exception => Left(e) }
      (readerExpects((sideFile, damage)), read) match {
        case (FindsNoSchema, Right(found)) => assert(found.isEmpty)
        case (ReadsTheOlderSchema, Right(found)) => assert(found.exists(_.valueSchema == olderValueSchema))
        case (FailsNamingTheFile, Left(e)) =>
          assert(e.getMessage.contains(file.getName), e.getMessage)
          assert(e.getMessage.contains("rewrites it when the query runs again"), e.getMessage)
        case (expected, other) => fail(s"$damage: expected $expected, found $other")
      }

      assert(stateOf(root, localDir) == model)
      assert(readSchema(root) == written, "the provider rewrote the schema file")
    }
  }

  private def lockFile(root: String, localDir: File): File = {
    val id = StateStoreId(root, 0L, 0)
    val claimed = LocalDirectories.claim(Some(localDir.getAbsolutePath), id)
    try new File(claimed.dir.getParentFile, claimed.dir.getName + ".lock")
    finally claimed.lock.foreach { case (channel, lock) => lock.release(); channel.close() }
  }

  private def claimsStable(root: String, localDir: File): Boolean = {
    val claimed = LocalDirectories.claim(Some(localDir.getAbsolutePath), StateStoreId(root, 0L, 0))
    try claimed.stable
    finally claimed.lock.foreach { case (channel, lock) => lock.release(); channel.close() }
  }

  for (damage <- FileDamage.all) {
    test(s"local .lock file: $damage -> the stable directory is claimed again, state exact") {
      val root = newCheckpointRoot()
      val localDir = newTempDir("local")
      writeStore(root, localDir)
      val file = lockFile(root, localDir)
      assert(file.isFile)
      damage(file, Array[Byte]('x'))
      assert(claimsStable(root, localDir))
      assert(stateOf(root, localDir) == model)
    }
  }

  test("a .lock file held by a process that was then killed: meanwhile a fresh directory, afterwards the stable one") {
    val root = newCheckpointRoot()
    val localDir = newTempDir("local")
    writeStore(root, localDir)
    val file = lockFile(root, localDir)
    KilledLockHolder.lockThenKill(file) {
      assert(!claimsStable(root, localDir), "a live holder keeps the stable directory")
      assert(stateOf(root, localDir) == model, "a provider rebuilds in a fresh directory meanwhile")
    }
    assert(claimsStable(root, localDir), "a dead holder's lock is gone with it")
    assert(stateOf(root, localDir) == model)
  }
}
