package txstate.engine

import org.scalatest.funsuite.AnyFunSuite

final class WriteBufferTest extends AnyFunSuite {
  import EngineTestKit._

  private def describe(changes: Iterator[ChangeRecord]): Vector[String] = changes.map {
    case ChangeRecord.Put(k, v) => s"put ${str(k)}=${str(v)}"
    case ChangeRecord.Delete(k) => s"delete ${str(k)}"
    case ChangeRecord.DeleteRange(f, u) => s"range ${str(f)}..${str(u)}"
  }.toVector

  test("changes list range deletes first (in order), then the point writes, dropping writes a later range delete covers") {
    val buffer = new WriteBuffer
    buffer.put(b("m"), b("1"))
    buffer.put(b("c"), b("1"))     // covered by the range delete below: dropped
    buffer.delete(b("x"))
    buffer.deleteRange(b("b"), b("d"))
    buffer.put(b("c"), b("2"))     // after the range delete: kept
    buffer.deleteRange(b("p"), b("r"))
    val changes = describe(buffer.changes)
    assert(changes.take(2) == Vector("range b..d", "range p..r"))
    assert(changes.drop(2).toSet == Set("put c=2", "put m=1", "delete x")) // distinct keys: any order applies the same
    assert(changes.size == 5)
    assert(buffer.touchedKeys.points.map(str).toSet == Set("c", "m", "x"))
    assert(buffer.touchedKeys.ranges.map(r => str(r.from)) == Vector("b", "p"))
  }

  test("byte accounting is exact for data and returns to zero on clear") {
    val buffer = new WriteBuffer
    val o = WriteBuffer.entryOverhead
    buffer.put(b("key"), b("value"))
    assert(buffer.byteSize == 3 + 5 + o)
    buffer.put(b("key"), b("v"))            // overwrite replaces the old size
    assert(buffer.byteSize == 3 + 1 + o)
    buffer.delete(b("key"))                 // tombstone: key only
    assert(buffer.byteSize == 3 + o)
    buffer.put(b("k2"), b("vv"))
    buffer.deleteRange(b("k"), b("l"))      // drops both point writes, adds the range
    assert(buffer.byteSize == 1 + 1 + o)
    assert(buffer.entryCount == 1)
    buffer.clear()
    assert(buffer.byteSize == 0 && buffer.entryCount == 0 && buffer.isEmpty)
  }

  test("hidesCommitted is true exactly inside buffered range deletes (half-open)") {
    val buffer = new WriteBuffer
    buffer.deleteRange(b("b"), b("d"))
    assert(!buffer.hidesCommitted(b("a")))
    assert(buffer.hidesCommitted(b("b")))
    assert(buffer.hidesCommitted(b("c\u00ff")))
    assert(!buffer.hidesCommitted(b("d")))
  }
}
