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
    assert(buffer.touchedKeys.points.iterator.map(str).toSet == Set("c", "m", "x"))
    assert(buffer.touchedKeys.ranges.map(r => str(r.from)) == Vector("b", "p"))
  }

  test("the change source sends exactly the change records, in their order, as slices of the packed rows") {
    val buffer = new WriteBuffer
    (1 to 3000).foreach(i => buffer.put(b(s"k$i"), b("v" * (i % 7))))
    (1 to 3000 by 3).foreach(i => buffer.delete(b(s"k$i")))
    buffer.deleteRange(b("k2"), b("k3"))
    (1 to 50).foreach(i => buffer.put(b(s"k2$i"), b(s"after $i"))) // after the range delete: kept
    val sent = Vector.newBuilder[String]
    // Each slice is read at once, as the changelog's writer does; offsets must stay inside the array.
    def slice(bytes: Array[Byte], from: Int, length: Int): String = str(java.util.Arrays.copyOfRange(bytes, from, from + length))
    buffer.changeSource.sendTo(new ChangeSink {
      def put(k: Array[Byte], kf: Int, kl: Int, v: Array[Byte], vf: Int, vl: Int): Unit = sent += s"put ${slice(k, kf, kl)}=${slice(v, vf, vl)}"
      def delete(k: Array[Byte], kf: Int, kl: Int): Unit = sent += s"delete ${slice(k, kf, kl)}"
      def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = sent += s"range ${str(from)}..${str(until)}"
    })
    val records = describe(buffer.changes)
    assert(records.size == 1 + (3000 - 1111) + 50) // the range, the writes outside k2*, the writes after it
    assert(sent.result() == records)
  }

  test("byte accounting is the heap the rows hold: in-place rewrites keep it, clear returns it to zero") {
    val buffer = new WriteBuffer
    assert(buffer.byteSize == 0)
    buffer.put(b("key"), b("value"))
    val one = buffer.byteSize
    assert(one >= 3 + 5)
    buffer.put(b("key"), b("VALUE"))        // same length: written over in place
    assert(buffer.byteSize == one)
    (0 until 10000).foreach(i => buffer.put(b(f"k$i%05d"), new Array[Byte](100)))
    val many = buffer.byteSize
    assert(many >= 10000L * (6 + 100) && many <= 3L * 10000 * (6 + 100 + 9) + (1 << 20), s"$many bytes")
    buffer.put(b("k2"), b("vv"))
    buffer.deleteRange(b("k"), b("l"))      // drops every point write under "k", adds the range
    assert(buffer.entryCount == 1)
    assert(buffer.lookup(b("k00001")).isEmpty && buffer.lookup(b("key")).isEmpty)
    buffer.clear()
    assert(buffer.byteSize == 0 && buffer.entryCount == 0 && buffer.isEmpty)
  }

  test("writes after the touched keys went to an undo leave the undo's keys as they were") {
    val buffer = new WriteBuffer
    buffer.put(b("a"), b("1"))
    val touched = buffer.touchedKeys
    buffer.put(b("b"), b("2"))
    buffer.forget(b("a"))
    assert(touched.points.iterator.map(str).toSet == Set("a"))
    assert(buffer.lookup(b("b")).collect { case BufferedWrite.Value(v) => str(v) } == Some("2"))
    assert(buffer.lookup(b("a")).isEmpty)
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
