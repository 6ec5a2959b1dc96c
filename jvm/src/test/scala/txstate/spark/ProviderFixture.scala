package txstate.spark

import java.io.File

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{LongType, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.Suite

import txstate.TempDirectories
import txstate.compat.StateApi.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec}

/**
 * Builds providers the way Spark's executors do (constructor, then `init`), without a
 * SparkContext: commit validation is switched off because there is no coordinator to report to.
 */
trait ProviderFixture extends TempDirectories { this: Suite =>
  val default: String = ColumnFamilies.defaultName

  def storeConf(settings: (String, String)*): StateStoreConf = {
    val sql = new SQLConf
    sql.setConfString("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
    settings.foreach { case (k, v) => sql.setConfString(k, v) }
    new StateStoreConf(sql, Map.empty)
  }

  /** A checkpoint root directory (`file:` URI string) for the StateStoreId. */
  def newCheckpointRoot(): String = newTempPath("checkpoint").toURI.toString

  def newProvider(
      checkpointRoot: String,
      keySchema: StructType,
      valueSchema: StructType,
      spec: KeyStateEncoderSpec = null,
      useColumnFamilies: Boolean = false,
      multipleValuesPerKey: Boolean = false,
      localDir: File = newTempDir("local"),
      settings: Seq[(String, String)] = Nil,
      partition: Int = 0): TxStateStoreProvider = {
    val provider = new TxStateStoreProvider
    provider.init(
      StateStoreId(checkpointRoot, 0L, partition),
      keySchema,
      valueSchema,
      Option(spec).getOrElse(NoPrefixKeyStateEncoderSpec(keySchema)),
      useColumnFamilies,
      storeConf((TxStateConf.prefix + "localDir" -> localDir.getAbsolutePath) +: settings: _*),
      new Configuration(),
      multipleValuesPerKey,
      None)
    provider
  }

  def withProvider[A](provider: TxStateStoreProvider)(f: TxStateStoreProvider => A): A =
    try f(provider) finally provider.close()

  /** Builds UnsafeRows of one schema from Scala values (Strings become UTF8String). */
  final class RowMaker(schema: StructType) {
    private val projection = UnsafeProjection.create(schema)
    def apply(values: Any*): UnsafeRow = {
      require(values.size == schema.size, s"expected ${schema.size} values for $schema, got $values")
      projection(InternalRow.fromSeq(values.zip(schema.fields).map {
        case (null, _) => null
        case (s: String, _) => UTF8String.fromString(s)
        case (n: Int, f) if f.dataType == LongType => n.toLong
        case (other, _) => other
      })).copy()
    }
  }

  /** Reads one row back into Scala values, following the schema's types. */
  def values(row: UnsafeRow, schema: StructType): Seq[Any] =
    if (row == null) null
    else schema.fields.toSeq.zipWithIndex.map { case (f, i) =>
      if (row.isNullAt(i)) null else row.get(i, f.dataType) match {
        case s: UTF8String => s.toString
        case other => other
      }
    }

  /** Drains a store iterator into (key values, value values), copying each row (Spark may reuse them); closes it. */
  def pairs(it: Iterator[UnsafeRowPair], keySchema: StructType, valueSchema: StructType)
      : Vector[(Seq[Any], Seq[Any])] =
    try it.map(p => (values(p.key.copy(), keySchema), values(p.value.copy(), valueSchema))).toVector
    finally it match {
      case closeable: AutoCloseable => closeable.close() // 4.x's iterators, and txstate's on 3.5
      case _ => () // Spark 3.5's own providers' iterators have nothing to close
    }
}
