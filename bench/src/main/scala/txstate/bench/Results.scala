package txstate.bench

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.time.LocalDateTime
import java.time.format.DateTimeFormatter

import com.fasterxml.jackson.databind.{ObjectMapper, SerializationFeature}
import com.fasterxml.jackson.module.scala.DefaultScalaModule

/**
 * Where the Scala benchmarks' reports go, as the Python ones' (bench_common.write_results):
 * bench/results/<kind>-<stamp>.md, what a person reads, and .json, the same numbers for scripts.
 */
object Results {
  val dir = new File("bench/results")

  /** The run's timestamp, in every file name it writes. */
  def stamp(): String = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))

  /**
   * Writes the markdown report and, when given, `data` as JSON (Scala maps, sequences, options and
   * case classes serialise as they read); returns the files written.
   */
  def write(kind: String, stamp: String, markdown: String, data: Option[AnyRef] = None): Seq[File] = {
    dir.mkdirs()
    val md = new File(dir, s"$kind-$stamp.md")
    Files.write(md.toPath, markdown.getBytes(UTF_8))
    md +: data.toSeq.map { d =>
      val json = new File(dir, s"$kind-$stamp.json")
      mapper.writeValue(json, d)
      json
    }
  }

  private lazy val mapper =
    new ObjectMapper().registerModule(DefaultScalaModule).enable(SerializationFeature.INDENT_OUTPUT)
}
