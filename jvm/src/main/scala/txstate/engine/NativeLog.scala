package txstate.engine

import java.io.File

import scala.annotation.nowarn

import org.rocksdb.{DBOptions, InfoLogLevel, Logger}
import org.slf4j.LoggerFactory

/**
 * Where RocksDB's own log lines go: the executor's log, tagged with the store's directory, instead of
 * a `LOG` file in each database directory. The file would cost an open file per store instance for as
 * long as the store is open, which an executor hosting thousands of instances cannot afford
 * (docs/ARCHITECTURE.md, "Open files"). RocksDB's errors and warnings are what a user needs; its
 * informational lines (compactions, flushes, the options dump) are not asked of RocksDB at all.
 *
 * Created from `options` before it opens a database, it reads RocksDB's level from them; RocksDB
 * calls it from its own threads. Its owner ([[NativeOptions]]) closes it after every database using it.
 * RocksDB 9 deprecates the constructor taking options for one taking a level, which RocksDB 8
 * (Spark 3.5's) lacks: the one both have is used.
 */
@nowarn("cat=deprecation")
private[engine] final class NativeLog private (dir: File, options: DBOptions) extends Logger(options) {
  override protected def log(level: InfoLogLevel, message: String): Unit = level match {
    // A fresh directory makes RocksDB warn that it has no files to list yet: normal here, so debug.
    case InfoLogLevel.WARN_LEVEL => NativeLog.log.debug(s"RocksDB in $dir: $message")
    case InfoLogLevel.ERROR_LEVEL | InfoLogLevel.FATAL_LEVEL => NativeLog.log.warn(s"RocksDB in $dir: $message")
    case _ => NativeLog.log.trace(s"RocksDB in $dir: $message")
  }
}

private[engine] object NativeLog {
  private val log = LoggerFactory.getLogger(classOf[NativeLog])

  /** Sets `options` to log through a new [[NativeLog]] for `dir`, and returns it for its owner to close. */
  def install(dir: File, options: DBOptions): NativeLog = {
    options.setInfoLogLevel(InfoLogLevel.WARN_LEVEL)
    val logger = new NativeLog(dir, options)
    options.setLogger(logger)
    logger
  }
}
