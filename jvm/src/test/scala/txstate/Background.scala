package txstate

import java.util.concurrent.{CompletableFuture, TimeUnit, TimeoutException}

/**
 * `body` running on a daemon thread of its own (a test's second actor: another instance's
 * maintenance, an upload under close), with its outcome kept for the test: what it returned or
 * what it threw. Daemon, so a body stuck in native code never keeps the test JVM alive.
 */
final class Background[T] private (name: String, body: () => T) {
  private val outcome = new CompletableFuture[Either[Throwable, T]]()
  private val thread = new Thread(() => {
    outcome.complete(try Right(body()) catch { case e: Throwable => Left(e) })
    ()
  }, name)
  thread.setDaemon(true)
  thread.start()

  def isAlive: Boolean = !outcome.isDone

  /** Whether the body is parked (a poll's pause, a lock), waited for up to `seconds`: a test then
   * knows the body reached its wait before it changes what the body waits for. */
  def parksWithin(seconds: Long): Boolean = {
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds)
    def parked = Set(Thread.State.WAITING, Thread.State.TIMED_WAITING).contains(thread.getState)
    while (isAlive && !parked && System.nanoTime() < deadline) Thread.`yield`() // onSpinWait is Java 9+; 3.5's rows compile for 8
    isAlive && parked
  }

  /** What the body returned or threw, once it ends within `seconds`; None while it still runs. */
  def await(seconds: Long): Option[Either[Throwable, T]] =
    try Some(outcome.get(seconds, TimeUnit.SECONDS))
    catch { case _: TimeoutException => None }

  /** What the body returned within `seconds`; its own failure rethrown, or an error naming where it is stuck. */
  def result(seconds: Long): T = await(seconds) match {
    case Some(Right(value)) => value
    case Some(Left(failure)) => throw failure
    case None => throw new AssertionError(s"'$name' still runs after $seconds s, at " +
      thread.getStackTrace.take(8).mkString(" <- "))
  }
}

object Background {
  def apply[T](name: String)(body: => T): Background[T] = new Background(name, () => body)
}
