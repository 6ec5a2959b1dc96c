package txstate.store.stress

/**
 * How long the stress runs, and on which seeds, from system properties or the environment (the
 * property wins): STRESS_SEED replays one schedule (STRESS_SCHEDULES times: a race replays likely,
 * not certainly); STRESS_SECONDS bounds the run (20 s inside `sbt test`, where it must stay short;
 * `make stress` passes 60 or more); STRESS_SCHEDULES stops it after that many schedules, whichever
 * comes first.
 */
final case class StressBudget(seed: Option[Long], seconds: Long, schedules: Option[Long]) {
  /** The seeds to run: the one asked for, or a run of seeds from a fresh base (printed, so each replays). */
  /** The most schedules to run: as asked, or one when a seed is replayed. */
  def limit: Option[Long] = schedules.orElse(seed.map(_ => 1L))

  def seeds: Iterator[Long] = seed match {
    case Some(s) => Iterator.continually(s)
    case None =>
      val base = new java.util.Random().nextInt(1 << 30).toLong * 1000
      Iterator.iterate(base)(_ + 1)
  }
}

object StressBudget {
  private def setting(name: String): Option[String] =
    sys.props.get(name).orElse(sys.env.get(name)).map(_.trim).filter(_.nonEmpty)

  def fromEnvironment(): StressBudget = StressBudget(
    seed = setting("STRESS_SEED").map(_.toLong),
    seconds = setting("STRESS_SECONDS").fold(20L)(_.toLong),
    schedules = setting("STRESS_SCHEDULES").map(_.toLong))
}
