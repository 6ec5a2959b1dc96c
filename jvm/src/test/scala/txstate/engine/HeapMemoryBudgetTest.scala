package txstate.engine

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.compat.ScalaLibrary.Using

/** The heap budget's claims and drops, engine by engine (docs/ARCHITECTURE.md, "Heap budget"); real RocksDB. */
final class HeapMemoryBudgetTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private def writeRows(engine: TxEngine, tag: String): CommitPoint = commitWith(engine) { tx =>
    (0 until 100).foreach { k =>
      val key = b(f"$tag-$k%03d")
      tx.get(key) // read first, as Spark's operators do: the undo keeps the row
      tx.put(key, b(s"$tag-value-$k"))
    }
  }

  test("a dropped undo cannot be rolled back: the engine says so and the version stays as committed") {
    val budget = new HeapMemoryBudget(1L << 20, () => 0L)
    Using.resource(TxEngine.open(newTempPath("old"), heap = Some(budget))) { old =>
      Using.resource(TxEngine.open(newTempPath("new"), heap = Some(budget))) { newer =>
        writeRows(old, "old")
        val before = writeRows(old, "old")
        val rows = committedRows(old)
        writeRows(newer, "new")
        assert(old.committedBeforeLastCommit.isDefined && budget.undoDropped == 0L)
        // The budget shrinks below what both undos hold: the next commit drops the older one, not its own.
        budget.resize(budget.undoBytes - 1)
        writeRows(newer, "new")
        assert(budget.undoDropped == 1L && old.drainUndoDropped() == 1L && newer.drainUndoDropped() == 0L)
        assert(old.committedBeforeLastCommit.isEmpty && newer.committedBeforeLastCommit.isDefined)
        assert(old.rollbackLastCommitIf(_ => true).isEmpty, "a rollback from a dropped undo")
        assert(old.committed == before && committedRows(old) == rows)
        assert(budget.usedBytes <= budget.limitBytes)
      }
    }
    assert(budget.undoBytes == 0L, "closed engines still count in the heap budget")
  }

  test("an undo's count is honest: at least its keys' and rows' bytes, and gone once the undo is") {
    val budget = new HeapMemoryBudget(64L << 20, () => 0L)
    Using.resource(TxEngine.open(newTempPath("db"), heap = Some(budget))) { engine =>
      writeRows(engine, "k")
      writeRows(engine, "k")
      // 100 keys of 5 bytes, each with a kept stamped row of ~20 bytes and its value copied out.
      val payload = 100L * (5 + 20 + 12)
      assert(budget.undoBytes > payload && budget.undoBytes < 100L * 400, s"an undo of 100 small rows counts ${budget.undoBytes} bytes")
      engine.rollbackLastCommit()
      assert(budget.undoBytes == 0L && budget.undoDropped == 0L)
    }
  }
}
