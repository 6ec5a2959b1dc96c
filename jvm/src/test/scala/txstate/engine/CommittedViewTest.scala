package txstate.engine

import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong, AtomicReference}

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/** Readers on other threads see only committed versions (docs/ARCHITECTURE.md, "Interactive queries"). */
final class CommittedViewTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private def rows(engine: TxEngine): Option[(Long, Vector[(String, String)])] =
    engine.readCommittedView(1000)(view => (view.point.version, strings(view.range(KeyRange.all))))

  test("the view follows commits, never an early-committed sub-batch of an open version, and never goes back") {
    withEngine(newTempPath("db")) { engine =>
      assert(rows(engine).contains(0L -> Vector.empty))
      commitWith(engine)(tx => Seq("a", "b").foreach(k => tx.put(b(k), b("1"))))
      assert(rows(engine).contains(1L -> Vector("a" -> "1", "b" -> "1")))

      val tx = engine.begin()
      tx.put(b("a"), b("2"))
      tx.put(b("c"), b("2"))
      engine.earlyCommit(tx)
      tx.delete(b("b"))
      engine.earlyCommit(tx)
      assert(engine.inFlight.contains(2L))
      assert(rows(engine).contains(1L -> Vector("a" -> "1", "b" -> "1")), "an early-committed sub-batch leaked into the view")
      assert(engine.readCommittedView(1000)(_.get(b("c"))).contains(None))

      engine.commit(tx, point(2, tx.numKeys))
      assert(rows(engine).contains(2L -> Vector("a" -> "2", "c" -> "2")))

      commitWith(engine)(_.put(b("d"), b("3")))
      val v3 = rows(engine)
      assert(v3.map(_._1).contains(3L))
      // Spark re-runs batch 3: the store goes back to 2, readers keep the committed 3 until the re-run commits.
      engine.rollbackLastCommit()
      assert(engine.committed.version == 2)
      assert(rows(engine) == v3)
      commitWith(engine)(_.put(b("e"), b("3")))
      assert(rows(engine).contains(3L -> Vector("a" -> "2", "c" -> "2", "e" -> "3")))
      // A replaced database shows nothing until it is back at the newest version shown.
      engine.wipe()
      assert(rows(engine).isEmpty)
      (1 to 3).foreach(v => commitWith(engine)(_.put(b("f"), b(v.toString))))
      assert(rows(engine).contains(3L -> Vector("f" -> "3")))
    }
  }

  test("a view cannot be used after its read ended") {
    withEngine(newTempPath("db")) { engine =>
      commitWith(engine)(_.put(b("a"), b("1")))
      val kept = engine.readCommittedView(1000)(identity).get
      val e = intercept[IllegalStateException](kept.get(b("a")))
      assert(e.getMessage.contains("after its read ended"))
    }
  }

  test("concurrent readers see whole versions while the owner commits, and nothing once it closes") {
    val engine = TxEngine.open(newTempPath("db"))
    val keys = (0 until 50).map(i => f"k$i%03d")
    commitWith(engine)(tx => keys.foreach(k => tx.put(b(k), b("1"))))
    val stop = new AtomicBoolean(false)
    val failure = new AtomicReference[Option[String]](None)
    val reads = new AtomicLong(0)
    val readers = (1 to 3).map { _ =>
      val t = new Thread(() => {
        var lastVersion = 0L
        while (!stop.get() && failure.get().isEmpty) {
          engine.readCommittedView(50) { view =>
            val values = strings(view.range(KeyRange.all)).map(_._2).distinct
            // Every commit rewrites all keys with its version: a mix would be a torn read.
            if (values != Vector(view.point.version.toString)) failure.set(Some(s"version ${view.point.version} showed $values"))
            if (view.point.version < lastVersion) failure.set(Some(s"went back from $lastVersion to ${view.point.version}"))
            lastVersion = view.point.version
            reads.incrementAndGet()
          }
        }
      })
      t.start()
      t
    }
    try {
      (2 to 150).foreach(v => commitWith(engine)(tx => keys.foreach(k => tx.put(b(k), b(v.toString)))))
      // A database replacement under the readers' feet; readers see nothing until it is back at 150.
      engine.wipe()
      (1 to 200).foreach(v => commitWith(engine)(tx => keys.foreach(k => tx.put(b(k), b(v.toString)))))
      Thread.sleep(50)
    } finally {
      engine.close()
      assert(engine.readCommittedView(10)(_ => 1).isEmpty)
      stop.set(true)
      readers.foreach(_.join(10000))
    }
    assert(failure.get().isEmpty, failure.get().getOrElse(""))
    assert(reads.get() > 0)
  }
}
