package txstate.store.stress

import java.io.File
import java.util.Random
import java.util.concurrent.atomic.{AtomicBoolean, AtomicReference}

import txstate.Background
import txstate.engine.EngineOptions
import txstate.store.{FollowerReplica, LocalDirectory, StoreInstance, StoreOptions, UncommittedLimits}

/**
 * One schedule: a query's run and its restart, against one store, with every actor Spark would
 * have on it at once (docs/reliability.md, "Stress").
 *
 * Run 1: instance A commits batches while its maintenance thread uploads snapshots and cleans up,
 * a follower re-anchors on the checkpoint and a reader reads A's committed views. Maybe a stale
 * instance B0 loads an early version into B's local directory and closes (so run 2 catches up).
 *
 * Run 2, all at once: A's unload maintenance (upload, cleanup, close: Spark 4.1+ runs it while the
 * restarted query already works), the new run's instance B loading the newest version (catch-up
 * from B0's version, or rebuild) and committing with its own maintenance beside it, an instance C
 * loading an older retained version, the follower, a reader of B's views, and a watcher of the
 * snapshots' files. Then, with everything stopped: verify finds no damage, and every listed
 * snapshot restores exactly its version.
 *
 * The shape (format, snapshot interval, early-commit limit, batch counts, who starts from where)
 * comes from the seed; so does every actor's Random and every file system call's pause.
 */
final class StoreSchedule(val seed: Long, dir: File) {
  // Mixed first: java.util.Random's first draws from neighbouring seeds are alike, and the seeds run in a row.
  private val mixed = StoreSchedule.mix(seed)
  private val shape = new Random(mixed)
  private def randomOf(actor: String) = new Random(StoreSchedule.mix(mixed + actor.hashCode))

  private val options = StoreOptions(
    idsInFileNames = shape.nextBoolean(),
    snapshotInterval = 1 + shape.nextInt(3),
    limits = if (shape.nextBoolean()) UncommittedLimits(Some(2L + shape.nextInt(3)), None) else UncommittedLimits.none)
  private val firstRun = 3 + shape.nextInt(5)
  private val secondRun = 2 + shape.nextInt(4)
  private val staleAt = if (shape.nextBoolean()) Some(1L + shape.nextInt(firstRun - 1)) else None
  private val oldVersion = math.max(1L, firstRun - shape.nextInt(2))

  val checks = new StressChecks(seed)
  private val world = new StressWorld(dir, options, new StressModel, checks)
  private val actors = new StoreActors(world)
  val pauses = new Pauses(mixed)

  def describe: String = s"format v${if (options.idsInFileNames) 2 else 1}, snapshot every ${options.snapshotInterval}, " +
    s"early commits past ${options.limits.maxRecords.fold("none")(n => s"$n rows")}, run 1: $firstRun batches, run 2: " +
    s"$secondRun, B starts ${staleAt.fold("empty")(v => s"at version $v")}, C loads $oldVersion"

  /** Runs the schedule to its end; what failed is in `checks`. */
  def run(): Unit = Pauses.during(pauses) {
    val bDir = world.localDir("b")
    val follower = FollowerReplica.open(LocalDirectory.temporary(world.localDir("follower")), world.root, world.conf,
      EngineOptions(), options.idsInFileNames, replayLimit = 1 + shape.nextInt(3), "follower")
    try {
      val a = world.open(world.localDir("a"), "A")
      world.actor("A's first load")(a.load(0, None))
      firstRunOf(a, bDir, follower)
      val b = secondRunOf(a, bDir, follower)
      try b.foreach(_ => quiescentChecks()) finally b.foreach(_.close())
    } finally follower.close()
  }

  private def firstRunOf(a: StoreInstance, bDir: File, follower: FollowerReplica): Unit = {
    val stop = new AtomicBoolean(false)
    val current = new AtomicReference[Option[StoreInstance]](Some(a))
    val others = Seq(
      side("A's maintenance")(actors.maintain(Some(a), stop, randomOf("A's maintenance"))),
      side("follower")(actors.follow(follower, stop, randomOf("follower 1"))),
      side("views of A")(actors.readViews(current, stop, randomOf("views of A"))),
      side("snapshot watcher")(actors.watchSnapshots(stop, randomOf("snapshot watcher 1"))))
    world.actor("A's batches") {
      actors.write(a, 0, firstRun, randomOf("A's batches"), "A") { v =>
        if (staleAt.contains(v)) staleB(bDir, v)
      }
    }
    stop.set(true)
    others.foreach(_.result(120))
  }

  /** B0: the instance that left version `v` in B's local directory, so B's load catches up from there. */
  private def staleB(bDir: File, v: Long): Unit = {
    val b0 = world.open(bDir, "B0")
    try {
      b0.load(v, world.id(v))
      val batch = b0.begin()
      try world.expectRows("B0 loads exactly the version asked for", v, StressModel.rowsOf(batch))
      finally batch.discard()
    } finally b0.close()
  }

  /** Run 2; B, open, when it opened (the quiescent checks run before it closes). */
  private def secondRunOf(a: StoreInstance, bDir: File, follower: FollowerReplica): Option[StoreInstance] = {
    val stop = new AtomicBoolean(false)
    val b = new AtomicReference[Option[StoreInstance]](None)
    val unload = side("A's unload maintenance") {
      try { a.uploadSnapshot(); a.cleanup(world.retain, world.graceMs) } finally a.close()
    }
    val reader = side("C, reading an old version")(actors.readOldVersion(oldVersion, "C"))
    val side2 = Seq(
      side("B's maintenance")(actors.maintain(b.get, stop, randomOf("B's maintenance"))),
      side("follower")(actors.follow(follower, stop, randomOf("follower 2"))),
      side("views of B")(actors.readViews(b, stop, randomOf("views of B"))),
      side("snapshot watcher")(actors.watchSnapshots(stop, randomOf("snapshot watcher 2"))))
    world.actor("B's batches") {
      val inst = world.open(bDir, "B")
      b.set(Some(inst))
      actors.write(inst, firstRun.toLong, secondRun, randomOf("B's batches"), "B")(_ => ())
    }
    Seq(unload, reader).foreach(_.result(120))
    stop.set(true)
    side2.foreach(_.result(120))
    b.get
  }

  /** With nothing running: verify sees a sound checkpoint, and each listed snapshot restores its version exactly. */
  private def quiescentChecks(): Unit = world.actor("quiescent checks") {
    val newest = world.model.newest
    val findings = StressVerify.findings(world, newest)
    checks.expect("verify finds no damage on a sound checkpoint", findings.isEmpty, findings.mkString("; "))
    world.reader().snapshots().foreach { e =>
      val inst = world.open(world.localDir("restore"), "restore", stable = false)
      try {
        val loaded = world.loading(s"the listed snapshot of version ${e.version} restores", e.version) {
          inst.openBatch(txstate.store.LoadRequest.FromSnapshot(e.version, e.version, world.id(e.version)))
        }
        loaded.foreach { batch =>
          try world.expectRows("a listed snapshot restores exactly its version", e.version, StressModel.rowsOf(batch))
          finally batch.discard()
        }
      } finally inst.close()
    }
  }

  /** An actor on a thread of its own, its failures recorded (so `result` only waits, with a deadline). */
  private def side(name: String)(body: => Unit): Background[Unit] = Background(name)(world.actor(name)(body))
}

object StoreSchedule {
  /** A 64-bit finalizer (MurmurHash3's): neighbouring seeds give unrelated schedules. */
  def mix(seed: Long): Long = {
    var z = seed
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L
    z ^ (z >>> 33)
  }
}
