package txstate.compat

import java.io.{ByteArrayOutputStream, InputStream}
import java.lang.reflect.Constructor
import java.util.zip.Checksum

import org.apache.hadoop.util.PureJavaCrc32C

/**
 * The JDK 9+ calls the shared code makes, written for the 3.5 line's Java 8 bytecode with the
 * JDK's meaning (docs/ARCHITECTURE.md, "Spark lines"); the 4.x lines use the JDK's own.
 */
object JavaLibrary {
  /** Bytes compared as unsigned, lexicographically (RocksDB's bytewise order). */
  def compareUnsigned(a: Array[Byte], b: Array[Byte]): Int = {
    val common = math.min(a.length, b.length)
    var i = 0
    while (i < common) {
      val diff = (a(i) & 0xff) - (b(i) & 0xff)
      if (diff != 0) return diff
      i += 1
    }
    a.length - b.length
  }

  /** The JDK's CRC32C when the JVM has one (9+), else Hadoop's: the same checksum either way. */
  def newCrc32c(): Checksum = crc32c.newInstance()

  private val crc32c: Constructor[_ <: Checksum] =
    try Class.forName("java.util.zip.CRC32C").asSubclass(classOf[Checksum]).getConstructor()
    catch { case _: ClassNotFoundException => classOf[PureJavaCrc32C].getConstructor() }

  def readAllBytes(in: InputStream): Array[Byte] = {
    val out = new ByteArrayOutputStream
    val buffer = new Array[Byte](8192)
    var n = in.read(buffer)
    while (n >= 0) { out.write(buffer, 0, n); n = in.read(buffer) }
    out.toByteArray
  }
}
