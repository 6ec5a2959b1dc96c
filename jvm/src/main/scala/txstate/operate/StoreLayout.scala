package txstate.operate

import scala.util.Try

import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

import txstate.spark.SparkOperatorMetadata

/** The providers whose files inspect knows by name. */
object ProviderKind {
  val txstate = "txstate"
  val rocksdb = "rocksdb"
  val hdfs = "hdfs"

  /** The kind of a recorded provider class; Spark's default (HDFS) when the query recorded none. */
  def of(providerClass: Option[String]): String = providerClass.getOrElse("HDFSBackedStateStoreProvider") match {
    case c if c.endsWith("TxStateStoreProvider") => txstate
    case c if c.endsWith("RocksDBStateStoreProvider") => rocksdb
    case c if c.endsWith("HDFSBackedStateStoreProvider") => hdfs
    case other => other
  }
}

/** One store of one stateful operator and the directory of each partition that has one. */
final case class OperatorStore(operatorId: Long, operatorName: String, storeName: String, storeIndex: Int,
    numPartitions: Option[Int], partitionDirs: Seq[(Int, Path)]) {
  def label: String = s"operator $operatorId ($operatorName), store $storeName"
}

/**
 * Where the stores of a checkpoint live: `state/<operator>/<partition>` (the default store) or
 * `state/<operator>/<partition>/<store>` (named stores, such as a join's four), with the store names
 * Spark's operator metadata lists. An operator without metadata (written by Spark 3.5) has the
 * named stores its partition directories hold as folders, else the default store.
 */
object StoreLayout {
  val defaultStore = "default"

  def stores(stateRoot: Path, fs: FileSystem): Seq[OperatorStore] =
    numericDirs(fs, stateRoot).flatMap { case (operatorId, operatorDir) =>
      val metadata = SparkOperatorMetadata.read(fs, operatorDir)
      val name = metadata.name.getOrElse("unnamed")
      val partitions = numericDirs(fs, operatorDir).map { case (p, dir) => (p.toInt, dir) }
      val infos = if (metadata.stores.nonEmpty) metadata.stores.map(s => s.name -> Some(s.numPartitions))
        else namedStoreDirs(fs, partitions.map(_._2)).map(_ -> None) match {
          case Seq() => Seq(defaultStore -> None)
          case named => named
        }
      infos.zipWithIndex.map { case ((storeName, count), index) =>
        val dirs = partitions.map { case (p, dir) => (p, if (storeName == defaultStore) dir else new Path(dir, storeName)) }
          .filter { case (_, dir) => fs.exists(dir) }
        OperatorStore(operatorId, name, storeName, index, count, dirs)
      }
    }

  /** Every file of one store partition, with the shared-file folder (`sst/`, `SSTs/`) inside it. */
  def files(fs: FileSystem, dir: Path): Seq[FileStatus] = {
    val top = fs.listStatus(dir).toSeq
    val shared = top.filter(s => s.isDirectory && sharedDirs.contains(s.getPath.getName))
      .flatMap(s => fs.listStatus(s.getPath).toSeq)
    (top ++ shared).filter(_.isFile)
  }

  /** The folders of named stores in partition directories (a join's four on Spark 3.5), in name order. */
  private def namedStoreDirs(fs: FileSystem, partitionDirs: Seq[Path]): Seq[String] =
    partitionDirs.flatMap(dir => fs.listStatus(dir).toSeq.filter(_.isDirectory).map(_.getPath.getName))
      .filterNot(name => sharedDirs.contains(name) || name.startsWith("_") || name.startsWith("."))
      .distinct.sorted

  /** The folders of stored files shared by snapshots: txstate's `sst/`, Spark's RocksDB's `SSTs/`. */
  val sharedDirs: Set[String] = Set("sst", "SSTs")

  private def numericDirs(fs: FileSystem, dir: Path): Seq[(Long, Path)] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isDirectory)
      .flatMap(s => Try(s.getPath.getName.toLong).toOption.map(_ -> s.getPath)).sortBy(_._1)
}
