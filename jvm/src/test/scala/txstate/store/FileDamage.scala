package txstate.store

import java.io.File
import java.nio.file.{Files, StandardOpenOption}

/**
 * The five ways a file gets damaged in the corruption matrix (docs/reliability.md, "Corruption
 * matrix"), done to real files on disk. `older` is the content of an older copy of the same kind
 * of file: what a restore from a backup, or a stale copy put back by hand, leaves.
 */
sealed abstract class FileDamage(val name: String) {
  def apply(file: File, older: => Array[Byte]): Unit

  override def toString: String = name
}

object FileDamage {
  /** One bit flipped in the middle of the file; an empty file (RocksDB's LOCK) gets a stray byte instead. */
  case object FlipByte extends FileDamage("flip a byte") {
    def apply(file: File, older: => Array[Byte]): Unit = {
      val bytes = Files.readAllBytes(file.toPath)
      if (bytes.isEmpty) Files.write(file.toPath, Array[Byte]('x'))
      else {
        val i = bytes.length / 2
        bytes(i) = (bytes(i) ^ 0x01).toByte
        Files.write(file.toPath, bytes)
      }
    }
  }

  /** The second half cut off (an empty file stays empty). */
  case object Truncate extends FileDamage("truncate") {
    def apply(file: File, older: => Array[Byte]): Unit = {
      val bytes = Files.readAllBytes(file.toPath)
      Files.write(file.toPath, java.util.Arrays.copyOf(bytes, bytes.length / 2), StandardOpenOption.TRUNCATE_EXISTING)
    }
  }

  case object Delete extends FileDamage("delete") {
    def apply(file: File, older: => Array[Byte]): Unit = Files.delete(file.toPath)
  }

  /** The file's content replaced by an older copy of the same kind of file, under its own name. */
  case object OlderCopy extends FileDamage("older copy") {
    def apply(file: File, older: => Array[Byte]): Unit = {
      val content = older
      Files.write(file.toPath, content, StandardOpenOption.TRUNCATE_EXISTING)
    }
  }

  case object ZeroLength extends FileDamage("zero length") {
    def apply(file: File, older: => Array[Byte]): Unit =
      Files.write(file.toPath, Array.emptyByteArray, StandardOpenOption.TRUNCATE_EXISTING)
  }

  val all: Seq[FileDamage] = Seq(FlipByte, Truncate, Delete, OlderCopy, ZeroLength)
}
