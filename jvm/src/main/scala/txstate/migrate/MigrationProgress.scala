package txstate.migrate

import org.json4s.{JInt, JObject, JString}
import org.json4s.jackson.JsonMethods

/**
 * Where a running migration is, for a progress bar or a log: the phase, the store partition being
 * worked on, partitions done of all, rows moved, and a time estimate from the partitions done so far.
 * Written by the migration thread, read by anyone (the Python client polls it).
 */
final class MigrationProgress(log: String => Unit) {
  private val startedMs = System.currentTimeMillis()
  @volatile private var phase = "inspect"
  @volatile private var current = ""
  @volatile private var done = 0
  @volatile private var total = 0
  @volatile private var rowCount = 0L

  def enter(newPhase: String, partitions: Int): Unit = {
    phase = newPhase
    done = 0
    total = partitions
    current = ""
    log(s"phase=$newPhase partitions=$partitions")
  }

  def starting(what: String): Unit = current = what

  def row(): Unit = rowCount += 1

  def finished(what: String, digest: StoreDigest): Unit = {
    done += 1
    log(s"""phase=$phase done=$done/$total store="$what" rows=${digest.rows} rowsPerSecond=$rowsPerSecond """ +
      s"etaSeconds=${etaSeconds.getOrElse(-1L)}")
  }

  def note(message: String): Unit = log(message)

  def rowsPerSecond: Long = {
    val elapsed = math.max(1L, System.currentTimeMillis() - startedMs)
    rowCount * 1000 / elapsed
  }

  def etaSeconds: Option[Long] =
    if (done == 0 || total == 0) None
    else Some((System.currentTimeMillis() - startedMs) * (total - done) / done / 1000)

  def json: String = JsonMethods.compact(JObject(
    "phase" -> JString(phase), "current" -> JString(current), "done" -> JInt(done), "total" -> JInt(total),
    "rows" -> JInt(rowCount), "rowsPerSecond" -> JInt(rowsPerSecond),
    "etaSeconds" -> JInt(BigInt(etaSeconds.getOrElse(-1L))), "elapsedMs" -> JInt(System.currentTimeMillis() - startedMs)))
}
