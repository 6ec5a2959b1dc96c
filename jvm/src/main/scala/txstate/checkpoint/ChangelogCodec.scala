package txstate.checkpoint

import java.io.{InputStream, OutputStream}

import scala.annotation.nowarn

import net.jpountz.lz4.{LZ4BlockInputStream, LZ4BlockOutputStream}

/**
 * How a changelog's records are stored after its header, recorded in the file as one byte so any
 * reader knows how to decode it. Records repeat much of each key and value (UnsafeRow layouts,
 * common prefixes), so LZ4, the codec Spark uses for its own state files, shrinks them several
 * times at a small CPU cost. lz4-java ships with Spark on every supported line.
 */
sealed abstract class ChangelogCodec(val id: Byte, val name: String) {
  /** A stream that encodes into `sink`; `finish` it, and `sink` stays open for the frame's checksum. */
  def encoder(sink: OutputStream): ChangelogCodec.Encoder
  def decoder(in: InputStream): InputStream
}

object ChangelogCodec {
  /** An encoding stream whose `finish` writes its last bytes without closing what is under it. */
  abstract class Encoder extends OutputStream {
    def finish(): Unit
  }

  case object Plain extends ChangelogCodec(0, "none") {
    def encoder(sink: OutputStream): Encoder = new Encoder {
      override def write(b: Int): Unit = sink.write(b)
      override def write(b: Array[Byte], off: Int, len: Int): Unit = sink.write(b, off, len)
      override def flush(): Unit = sink.flush()
      def finish(): Unit = sink.flush()
    }
    def decoder(in: InputStream): InputStream = in
  }

  case object Lz4 extends ChangelogCodec(1, "lz4") {
    private val blockBytes = 1 << 16

    def encoder(sink: OutputStream): Encoder = new Encoder {
      private val lz4 = new LZ4BlockOutputStream(sink, blockBytes)
      override def write(b: Int): Unit = lz4.write(b)
      override def write(b: Array[Byte], off: Int, len: Int): Unit = lz4.write(b, off, len)
      override def flush(): Unit = lz4.flush()
      def finish(): Unit = lz4.finish()
    }
    // The constructor is deprecated from lz4-java 1.10 (Spark 4.3) in favour of a builder that
    // Spark 4.0's lz4-java 1.8 lacks; it works on both. Its input has passed the frame's CRC32C.
    @nowarn("cat=deprecation")
    def decoder(in: InputStream): InputStream = new LZ4BlockInputStream(in)
  }

  val all: Seq[ChangelogCodec] = Seq(Plain, Lz4)

  def byId(id: Byte): Option[ChangelogCodec] = all.find(_.id == id)
}
