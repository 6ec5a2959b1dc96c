package txstate.compat

import java.io.{File, InputStream}
import java.security.KeyStore
import java.util.Arrays
import java.util.zip.{CRC32C, Checksum}

/**
 * The JDK 9+ calls the shared code makes, for the lines compiled for Java 17: the JDK's own
 * (docs/ARCHITECTURE.md, "Spark lines"). The 3.5 line, compiled for Java 8, has the same names.
 */
object JavaLibrary {
  /** Bytes compared as unsigned, lexicographically (RocksDB's bytewise order). */
  def compareUnsigned(a: Array[Byte], b: Array[Byte]): Int = Arrays.compareUnsigned(a, b)

  /** Whether `a[aFrom, aFrom + length)` and `b[bFrom, bFrom + length)` hold the same bytes. */
  def equalRanges(a: Array[Byte], aFrom: Int, b: Array[Byte], bFrom: Int, length: Int): Boolean =
    Arrays.equals(a, aFrom, aFrom + length, b, bFrom, bFrom + length)

  def newCrc32c(): Checksum = new CRC32C

  def readAllBytes(in: InputStream): Array[Byte] = in.readAllBytes()

  /** A key store file of either type (PKCS12 or JKS), found from its contents. */
  def loadKeyStore(file: File, password: Array[Char]): KeyStore = KeyStore.getInstance(file, password)
}
