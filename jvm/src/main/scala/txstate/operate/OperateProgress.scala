package txstate.operate

import org.json4s.{JInt, JObject, JString}
import org.json4s.jackson.JsonMethods

/**
 * Where a running inspect or verify is: the phase, the store partition being read, partitions
 * done of all, and files read. Written by the reading thread, polled by the Python client.
 */
final class OperateProgress {
  private val startedMs = System.currentTimeMillis()
  @volatile private var phase = "listing"
  @volatile private var current = ""
  @volatile private var done = 0
  @volatile private var total = 0
  @volatile private var files = 0L

  def enter(newPhase: String, partitions: Int): Unit = {
    phase = newPhase
    done = 0
    total = partitions
    current = ""
  }

  def starting(what: String): Unit = current = what
  def fileRead(): Unit = files += 1
  def finished(): Unit = done += 1

  def json: String = JsonMethods.compact(JObject(
    "phase" -> JString(phase), "current" -> JString(current), "done" -> JInt(done), "total" -> JInt(total),
    "files" -> JInt(files), "elapsedMs" -> JInt(System.currentTimeMillis() - startedMs)))
}
