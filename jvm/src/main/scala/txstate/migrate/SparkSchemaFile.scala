package txstate.migrate

import java.io.{DataInputStream, EOFException}

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.types.{DataType, StructType}

import txstate.compat.ScalaLibrary.Using

/**
 * The key and value schema Spark records for a store of a non-transformWithState operator, in the
 * checkpoint of its partition 0: `state/<op>/0/_metadata/schema` (the default store) or
 * `state/<op>/0/<store>/_metadata/schema` (named stores, e.g. a join's four). Spark writes it
 * whatever the provider, so it is how rows written by any provider are read.
 *
 * The file is Java data-stream encoded: the format (`v1` or `v2`, a modified-UTF string), then the
 * key schema and the value schema as JSON; `v2` splits each JSON text into a count and that many
 * string chunks, because one modified-UTF string holds at most 64 KiB.
 */
object SparkSchemaFile {
  def path(stateRoot: Path, operatorId: Long, storeName: String): Path = {
    val partition0 = new Path(new Path(stateRoot, operatorId.toString), "0")
    val storeDir = if (storeName == "default") partition0 else new Path(partition0, storeName)
    new Path(new Path(storeDir, "_metadata"), "schema")
  }

  def read(fs: FileSystem, file: Path): (StructType, StructType) =
    Using.resource(new DataInputStream(fs.open(file))) { in =>
      try {
        in.readUTF() match {
          case "v1" => (struct(in.readUTF(), file), struct(in.readUTF(), file))
          case "v2" => (struct(chunks(in), file), struct(chunks(in), file))
          case other => throw MigrationErrors.badSchemaFile(file.toString,
            s"its format is '$other'; this tool reads formats v1 and v2 (transformWithState's v3 files are not supported)")
        }
      } catch {
        case e: EOFException => throw MigrationErrors.badSchemaFile(file.toString, s"it ends early ($e)")
      }
    }

  private def chunks(in: DataInputStream): String = {
    val n = in.readInt()
    if (n < 0 || n > (1 << 20)) throw new EOFException(s"implausible chunk count $n")
    (0 until n).map(_ => in.readUTF()).mkString
  }

  private def struct(json: String, file: Path): StructType = DataType.fromJson(json) match {
    case s: StructType => s
    case other => throw MigrationErrors.badSchemaFile(file.toString, s"a schema is a ${other.typeName}, not a struct")
  }
}
