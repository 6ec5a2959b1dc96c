package txstate.compat

import java.io.{ByteArrayOutputStream, File, FileInputStream, InputStream}
import java.lang.reflect.Constructor
import java.security.KeyStore
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

  /** Whether `a[aFrom, aFrom + length)` and `b[bFrom, bFrom + length)` hold the same bytes. */
  def equalRanges(a: Array[Byte], aFrom: Int, b: Array[Byte], bFrom: Int, length: Int): Boolean = {
    var i = 0
    while (i < length && a(aFrom + i) == b(bFrom + i)) i += 1
    i == length
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

  /**
   * A key store file of either type (PKCS12 or JKS). Java 8 cannot tell the type from the contents
   * (9+'s `KeyStore.getInstance(File, char[])`), so PKCS12 is tried first, then JKS; the PKCS12
   * failure is kept with the JKS one, which names the password or file as the JDK does.
   */
  def loadKeyStore(file: File, password: Array[Char]): KeyStore = {
    def load(kind: String): KeyStore = {
      val store = KeyStore.getInstance(kind)
      val in = new FileInputStream(file)
      try store.load(in, password) finally in.close()
      store
    }
    try load("PKCS12") catch {
      case pkcs12: java.io.IOException =>
        try load("JKS") catch { case jks: Exception => jks.addSuppressed(pkcs12); throw jks }
    }
  }
}
