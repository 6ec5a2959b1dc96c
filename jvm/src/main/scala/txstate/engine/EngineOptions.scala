package txstate.engine

/**
 * Native memory and tuning of one local database. Defaults keep one store instance small, since an
 * executor hosts one per stateful partition (shuffle partitions x operators x stores).
 *
 * @param blockCacheBytes  LRU block cache for reads (per store instance; unused under a [[NativeMemoryBudget]])
 * @param writeBufferBytes size of one memtable (under a budget too)
 * @param maxWriteBuffers  memtables per column family before writes stall on flush (under a budget too)
 * @param replayChunkBytes the largest WriteBatch built while replaying a changelog
 * @param formatVersion    the storage format new versions are written in: 2, or 1 (plain rows, as 0.1.0 wrote
 *                         them) only for benchmarks that compare the two in one run
 * @param backgroundWriteRows buffered entries from which a batch's writes start going to the database in the
 *                         background while it runs, in hand-overs of this many (0: all at commit;
 *                         docs/ARCHITECTURE.md, "Background writes")
 */
final case class EngineOptions(
    blockCacheBytes: Long = 8L << 20,
    writeBufferBytes: Long = 64L << 20,
    maxWriteBuffers: Int = 2,
    replayChunkBytes: Long = 32L << 20,
    formatVersion: Int = CommitPoint.currentFormatVersion,
    backgroundWriteRows: Int = 4096) {
  require(blockCacheBytes > 0, s"blockCacheBytes must be > 0, got $blockCacheBytes")
  require(writeBufferBytes > 0, s"writeBufferBytes must be > 0, got $writeBufferBytes")
  require(maxWriteBuffers >= 2, s"maxWriteBuffers must be >= 2, got $maxWriteBuffers")
  require(replayChunkBytes > 0, s"replayChunkBytes must be > 0, got $replayChunkBytes")
  require(backgroundWriteRows >= 0, s"backgroundWriteRows must be >= 0, got $backgroundWriteRows")
  require(CommitPoint.readableFormatVersions.contains(formatVersion), s"formatVersion must be 1 or 2, got $formatVersion")
}
