"""The streaming benchmark's input: parquet files written once, read by every provider.

Each micro-batch is one parquet file, read with `maxFilesPerTrigger=1`; modification times increase
with the file index so the file source takes them in order. Keys come from a seeded generator, so
every provider (and every repetition) sees the same rows in the same batches, and state grows as
the batches bring new keys.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SEED = 20261122


@dataclass(frozen=True)
class DataSize:
    """How much input: `batches` files per source, `rows` rows per file, keys drawn from `keys`."""

    batches: int
    rows: int
    keys: int
    join_rows: int
    join_keys: int
    warmup_batches: int

    def describe(self) -> str:
        return (f"{self.batches} batches; aggregation and dropDuplicates: {self.rows:,} rows/batch, keys drawn "
                f"from {self.keys:,}; join: {self.join_rows:,} rows/batch per side, keys drawn from "
                f"{self.join_keys:,}; first {self.warmup_batches} batches of each run not counted")

    def as_dict(self) -> dict:
        return asdict(self)


# Sized for a shared, busy 2-core machine: quick takes a few minutes, full about twenty (R=3).
QUICK = DataSize(batches=5, rows=20_000, keys=80_000, join_rows=4_000, join_keys=30_000, warmup_batches=2)
FULL = DataSize(batches=8, rows=40_000, keys=300_000, join_rows=8_000, join_keys=80_000, warmup_batches=3)


def _write_batches(directory: Path, columns: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    base = time.time() - 100_000
    for index, batch in enumerate(columns):
        target = directory / f"batch-{index:04d}.parquet"
        pq.write_table(pa.table(batch), target)
        os.utime(target, (base + 10 * index, base + 10 * index))


def write_inputs(root: Path, size: DataSize) -> dict[str, Path]:
    """Writes `events` (k, v) for the aggregation and dropDuplicates, `left` (k, lv) and `right`
    (k, rv) for the join; returns the directories by name."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    dirs = {name: root / name for name in ("events", "left", "right")}
    events, left, right = [], [], []
    for b in range(size.batches):
        offset = np.int64(b * size.rows)
        events.append({"k": rng.integers(0, size.keys, size.rows, dtype=np.int64),
                       "v": np.arange(size.rows, dtype=np.int64) + offset})
        join_offset = np.int64(b * size.join_rows)
        left.append({"k": rng.integers(0, size.join_keys, size.join_rows, dtype=np.int64),
                     "lv": np.arange(size.join_rows, dtype=np.int64) + join_offset})
        right.append({"k": rng.integers(0, size.join_keys, size.join_rows, dtype=np.int64),
                      "rv": np.arange(size.join_rows, dtype=np.int64) + join_offset})
    for name, batches in (("events", events), ("left", left), ("right", right)):
        _write_batches(dirs[name], batches)
    return dirs


def write_small_batches(directory: Path, state_keys: int, rows: int, batches: int) -> None:
    """The small-batch shape: batch 0 brings `state_keys` distinct keys (k, v), then `batches`
    batches of `rows` rows each, keys drawn uniformly from those already in state."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    columns = [{"k": np.arange(state_keys, dtype=np.int64), "v": np.ones(state_keys, dtype=np.int64)}]
    for b in range(batches):
        columns.append({"k": rng.integers(0, state_keys, rows, dtype=np.int64),
                        "v": np.arange(rows, dtype=np.int64) + np.int64(b * rows)})
    _write_batches(directory, columns)
