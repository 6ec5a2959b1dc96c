package txstate.engine

import org.scalatest.funsuite.AnyFunSuite

final class PackedRowsTest extends AnyFunSuite {
  private final case class Row(tag: Int, value: Vector[Byte])

  private def contents(rows: PackedRows): Map[Vector[Byte], Row] =
    rows.liveSlots.map(s => rows.key(s).toVector -> Row(rows.tag(s), rows.value(s).toVector)).toMap

  // The rows as `foreachSlice` hands them over: each read from the array that holds it.
  private def sliced(rows: PackedRows): Map[Vector[Byte], Row] = {
    val seen = Map.newBuilder[Vector[Byte], Row]
    rows.foreachSlice { (tag, bytes, keyFrom, keyLength, valueFrom, valueLength) =>
      seen += bytes.slice(keyFrom, keyFrom + keyLength).toVector -> Row(tag, bytes.slice(valueFrom, valueFrom + valueLength).toVector)
    }
    seen.result()
  }

  test("random puts, rewrites and removals read back as a hash map holds them, through rehashes and compactions") {
    val random = new scala.util.Random(31)
    val rows = new PackedRows
    val expected = scala.collection.mutable.HashMap.empty[Vector[Byte], Row]
    // Few distinct keys and values of changing lengths: rewrites leave dead bytes, so the rows compact
    // many times; keys ending in every byte value test the hash's low bits.
    (1 to 400000).foreach { step =>
      val key = Array[Byte]((random.nextInt(40)).toByte, random.nextInt(256).toByte)
      val k = new BytesKey(key)
      random.nextInt(10) match {
        case 0 | 1 =>
          assert(rows.remove(k) == expected.remove(key.toVector).isDefined, s"step $step")
        case 2 =>
          val value = Array.fill(random.nextInt(300))(random.nextInt().toByte)
          assert(rows.putIfAbsent(k, 2, value) == !expected.contains(key.toVector), s"step $step")
          if (!expected.contains(key.toVector)) expected(key.toVector) = Row(2, value.toVector)
        case _ =>
          val value = Array.fill(if (random.nextBoolean()) 8 else random.nextInt(3000))(random.nextInt().toByte)
          val tag = random.nextInt(2)
          rows.put(k, tag, value)
          expected(key.toVector) = Row(tag, value.toVector)
      }
      if (step % 50000 == 0) {
        assert(contents(rows) == expected.toMap, s"step $step")
        assert(sliced(rows) == expected.toMap, s"step $step")
      }
    }
    assert(rows.size == expected.size)
    expected.foreach { case (key, row) =>
      val at = rows.find(new BytesKey(key.toArray))
      assert(at >= 0 && rows.tag(at) == row.tag && rows.value(at).toVector == row.value)
    }
    assert(rows.find(new BytesKey(Array[Byte](100, 0))) < 0)
    // Dead bytes are compacted away: what the rows hold stays within a few times what is live.
    val liveBytes = expected.map { case (k, r) => 9L + k.size + r.value.size }.sum
    assert(rows.heapBytes < 3 * liveBytes + (8L << 20), s"${rows.heapBytes} bytes for $liveBytes live")
  }

  test("rows sized for in advance read back alike, and walking them past the last row fails") {
    val rows = new PackedRows(expectedRows = 5000)
    (0 until 6000).foreach(i => rows.put(new BytesKey(BigInt(i).toByteArray), i % 3, BigInt(i * 7).toByteArray))
    assert(contents(rows) == (0 until 6000).map(i => BigInt(i).toByteArray.toVector -> Row(i % 3, BigInt(i * 7).toByteArray.toVector)).toMap)
    val walk = rows.liveSlots
    (0 until 6000).foreach(_ => walk.next())
    assert(!walk.hasNext)
    intercept[NoSuchElementException](walk.next())
  }

  test("a row longer than a chunk gets a chunk of its own; a copy is independent of the original") {
    val rows = new PackedRows
    val big = Array.tabulate(5 << 20)(_.toByte)
    rows.put(new BytesKey(Array[Byte](1)), 1, Array[Byte](7))
    rows.put(new BytesKey(Array[Byte](2)), 1, big)
    val copy = rows.copy()
    rows.put(new BytesKey(Array[Byte](1)), 1, Array[Byte](8))
    rows.remove(new BytesKey(Array[Byte](2)))
    assert(contents(copy) == Map(Vector[Byte](1) -> Row(1, Vector[Byte](7)), Vector[Byte](2) -> Row(1, big.toVector)))
    assert(contents(rows) == Map(Vector[Byte](1) -> Row(1, Vector[Byte](8))))
  }
}
