package txstate.store.stress

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * Schedule-randomizing stress of the store layer (docs/reliability.md, "Stress"): schedule after
 * schedule of several instances of one store at work at once, on real RocksDB and real files whose
 * every checkpoint call may pause ([[StressFileSystem]]), each checked against the model of what
 * each version holds ([[StoreSchedule]]). Prints each schedule's seed and a summary; fails with
 * every failure, each with the seed that replays it (STRESS_SEED=<n>).
 */
final class StoreStressTest extends AnyFunSuite with TempDirectories {
  test("instances of one store loading, committing, maintaining and reading at once never break the model") {
    val budget = StressBudget.fromEnvironment()
    val deadline = System.nanoTime() + budget.seconds * 1000000000L
    val seeds = budget.seeds
    var schedules = 0L
    var checks = 0L
    var excused = 0L
    var calls = 0L
    var events = Map.empty[String, Long]
    val failures = Seq.newBuilder[StressFailure]
    var failedSchedules = 0
    def more = budget.limit.forall(schedules < _) && (schedules == 0 || System.nanoTime() < deadline)
    while (more) {
      val seed = seeds.next()
      val dir = newTempDir(s"schedule-$seed")
      val schedule = new StoreSchedule(seed, dir)
      println(s"stress: schedule ${schedules + 1}, seed $seed: ${schedule.describe}")
      try schedule.run()
      catch { case e: Throwable => schedule.checks.fail("the schedule", "it threw", e) }
      finally TempDirectories.deleteRecursively(dir.toPath) // 2,000 schedules' databases would fill the disk
      schedules += 1
      checks += schedule.checks.count
      excused += schedule.checks.excusedCount
      calls += schedule.pauses.calls.get
      events = schedule.checks.events.foldLeft(events) { case (sum, (k, n)) => sum + (k -> (sum.getOrElse(k, 0L) + n)) }
      val failed = schedule.checks.failures
      if (failed.nonEmpty) {
        failedSchedules += 1
        failed.foreach(f => println(s"stress: FAILED $f"))
      }
      failures ++= failed
    }
    val all = failures.result()
    println(s"stress: $schedules schedules, $checks checks, ${all.size} failures in $failedSchedules schedules " +
      s"($excused loads of versions cleanup was free to delete, $calls file system calls paused or not)")
    println(s"stress: loads by path: ${events.toSeq.sorted.map { case (k, n) => s"$k $n" }.mkString(", ")}")
    assert(all.isEmpty, all.take(10).mkString("\n"))
  }
}
