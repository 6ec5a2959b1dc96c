package txstate.engine

import java.util.concurrent.{CompletableFuture, CompletionException, ExecutorService, Executors, ThreadFactory}
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}

/**
 * One engine's writes that run on a background thread while its batch goes on (docs/ARCHITECTURE.md,
 * "Background writes"): each runs after the one submitted before it, so the database sees them in
 * the order the batch made them, and a failed one skips every later one until [[await]] reports it.
 *
 * The threads are shared by every engine of the JVM (one per core, daemons): a write is a RocksDB
 * memtable insert of a few thousand rows, milliseconds of CPU, never a wait on a file.
 *
 * Owner's thread only (submits and waits); the writes themselves run on the shared threads.
 */
private[engine] final class BackgroundWrites {
  private var last: CompletableFuture[Void] = CompletableFuture.completedFuture(null)

  /** Runs `write` after every write submitted before it, on a background thread. */
  def submit(write: () => Unit): Unit = {
    BackgroundWrites.queued.incrementAndGet()
    last = last.thenRunAsync(() => write(), BackgroundWrites.threads)
    // Counted off however it ends: a write skipped after an earlier one failed never runs.
    last.whenComplete((_: Void, _: Throwable) => { BackgroundWrites.queued.decrementAndGet(); () })
  }

  /**
   * Waits for every submitted write (uninterruptibly: none may still run when the caller goes on
   * to undo them or close the database) and throws the first one's failure, if any.
   */
  def await(): Unit = {
    val waited = last
    last = CompletableFuture.completedFuture(null)
    try waited.join()
    catch { case e: CompletionException if e.getCause != null => throw e.getCause }
  }

  /** Waits like [[await]] but keeps a failure to itself: the database is being closed or replaced anyway. */
  def abandon(): Unit =
    try await()
    catch { case scala.util.control.NonFatal(_) => () }
}

/** The threads every engine's background writes share, and how many of their writes wait (the executor's backlog). */
object BackgroundWrites {
  // Submitted and not yet finished, over every engine of the JVM (the executor's backlog gauge).
  private val queued = new AtomicLong()

  /** Writes of every engine of this JVM submitted and not yet run to their end (docs/ARCHITECTURE.md, "Background writes"). */
  def waiting: Long = queued.get()

  private val threads: ExecutorService = {
    val count = new AtomicInteger()
    val factory: ThreadFactory = (r: Runnable) => {
      val t = new Thread(r, s"txstate-background-write-${count.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
    Executors.newFixedThreadPool(math.max(1, Runtime.getRuntime.availableProcessors), factory)
  }
}
