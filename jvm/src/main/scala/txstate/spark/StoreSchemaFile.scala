package txstate.spark

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.{DataType, StructType}
import org.json4s.{JBool, JInt, JObject}
import org.json4s.jackson.JsonMethods

import txstate.compat.JavaLibrary
import txstate.compat.StateApi.KeyStateEncoderSpec
import txstate.compat.ScalaLibrary.Using

/**
 * How a store's rows are encoded, written next to its checkpoint by the providers that write it,
 * so a reader without a loaded provider (an interactive query on the driver, or on checkpoint
 * files) can encode keys and decode rows exactly as the store does:
 * `<state root>/<operator>/_txstate/<store name>.schema.json`.
 */
final case class StoreSchema(keySchema: StructType, valueSchema: StructType, spec: KeyStateEncoderSpec,
    multiValued: Boolean) {
  def codec: RowCodec = new RowCodec(keySchema, valueSchema, spec, multiValued)

  def json: String = JsonMethods.compact(JObject(
    "format" -> JInt(1),
    "keySchema" -> JsonMethods.parse(keySchema.json),
    "valueSchema" -> JsonMethods.parse(valueSchema.json),
    "keyStateEncoderSpec" -> spec.jsonValue,
    "multiValued" -> JBool(multiValued)))
}

object StoreSchemaFile {
  def path(stateRoot: String, operatorId: Long, storeName: String): Path =
    new Path(new Path(new Path(stateRoot, operatorId.toString), "_txstate"), s"$storeName.schema.json")

  def path(id: StateStoreId): Path = path(id.checkpointRootLocation, id.operatorId, id.storeName)

  /** Writes `schema` for `id`'s store unless the file already says exactly that. */
  def ensure(id: StateStoreId, schema: StoreSchema, hadoopConf: Configuration): Unit = {
    val target = path(id)
    val text = schema.json
    // A file the file system reports damaged (a checksum error) is rewritten like one that differs.
    val current = try read(target, hadoopConf) catch { case _: java.io.IOException => None }
    if (current.forall(_ != text)) {
      val fs = target.getFileSystem(hadoopConf)
      val temp = new Path(target.getParent, s".${target.getName}.${java.util.UUID.randomUUID()}.tmp")
      Using.resource(fs.create(temp, true))(_.write(text.getBytes(UTF_8)))
      // Every partition's provider writes the same text; whichever rename lands last is as good.
      if (!fs.rename(temp, target)) {
        fs.delete(target, false)
        if (!fs.rename(temp, target)) {
          fs.delete(temp, false)
          if (read(target, hadoopConf).forall(_ != text)) throw TxStateErrors.schemaFileNotWritten(target.toString)
        }
      }
    }
  }

  /** The schema of a store, if a txstate provider has written one. */
  def load(stateRoot: String, operatorId: Long, storeName: String, hadoopConf: Configuration): Option[StoreSchema] = {
    val file = path(stateRoot, operatorId, storeName)
    // A file system's own check (Hadoop's .crc side files) reports damage without naming what to do.
    val found =
      try read(file, hadoopConf)
      catch { case e: java.io.IOException => throw TxStateErrors.badSchemaFile(file.toString, e) }
    found.map(parse(_, file.toString))
  }

  /** The schema in the text of a schema file (`file` names it in the error when the text is damaged). */
  def parse(text: String, file: String): StoreSchema =
    try {
      val fields = JsonMethods.parse(text) match {
        case JObject(f) => f.toMap
        case _ => throw new IllegalArgumentException("not a JSON object")
      }
      val keySchema = DataType.fromJson(JsonMethods.compact(fields("keySchema"))).asInstanceOf[StructType]
      val valueSchema = DataType.fromJson(JsonMethods.compact(fields("valueSchema"))).asInstanceOf[StructType]
      val specMap = fields("keyStateEncoderSpec").values.asInstanceOf[Map[String, Any]]
      StoreSchema(keySchema, valueSchema, KeyStateEncoderSpec.fromJson(keySchema, specMap),
        fields.get("multiValued").contains(JBool(true)))
    } catch {
      case e: Exception =>
        throw TxStateErrors.badSchemaFile(file, e)
    }

  private def read(file: Path, hadoopConf: Configuration): Option[String] = {
    val fs = file.getFileSystem(hadoopConf)
    if (!fs.exists(file)) None
    else Some(Using.resource(fs.open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8)))
  }
}
