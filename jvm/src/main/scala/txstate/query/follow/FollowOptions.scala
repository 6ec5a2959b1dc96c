package txstate.query.follow

import txstate.engine.EngineOptions

/**
 * How a follower runs.
 *
 * @param partitions     the partitions to replicate; None: all of them
 * @param pollIntervalMs how often the leader's commit log is checked for a newer batch
 * @param replayLimit    versions a replica replays to catch up; further behind, it re-anchors on a
 *                       newer snapshot when one exists
 * @param localDir       where replicas keep their local databases (a fresh directory each, deleted on close)
 * @param engine         RocksDB memory of each replica: the writer's settings (`txstate.blockCacheSizeMB`, ...)
 */
final case class FollowOptions(
    partitions: Option[Seq[Int]] = None,
    pollIntervalMs: Long = 200L,
    replayLimit: Int = 20,
    localDir: String = System.getProperty("java.io.tmpdir"),
    engine: EngineOptions = EngineOptions()) {
  require(pollIntervalMs >= 10, s"pollIntervalMs must be >= 10, got $pollIntervalMs")
  require(replayLimit >= 1, s"replayLimit must be >= 1, got $replayLimit")
}
