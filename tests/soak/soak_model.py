"""The soak's input and the model of what the three queries must emit, computed in the harness.

Every micro-batch is one JSON file per source, generated from (seed, batch index) alone, so a
restarted harness or a re-run batch sees the same rows. The model is plain Python: it folds the
batches in order and says, per batch, the rows each query must emit and the aggregation's state
after it (to check interactive-query answers at the batch they say they read).

The queries (soak_driver.py builds them):
  * agg: `groupBy(k).agg(count, sum(v))`, update mode: per batch, (k, n, total) of every key the
    batch touched, with its running count and sum;
  * dedup: `dropDuplicates(["k"])`, append mode: per batch, the (k, v) rows whose key no earlier
    batch had (v is a function of k, so which duplicate Spark keeps does not matter);
  * join: inner stream-stream join of left (k, a) and right (k, b) on k, append mode, no
    watermark: per batch, every new (left, right) pair of matching rows, where a pair is new when
    one of its rows arrived in the batch (right rows match left rows of this and the previous file).
    Its two file sources list the input directories one after the other, so a side may read file i
    a batch later than the other: the join's model takes, per batch, the files each side read as
    Spark recorded them in the checkpoint (`join_expected`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Mapping, Sequence

QUERIES = ("agg", "dedup", "join")
SOURCES = ("agg", "dedup", "left", "right")
SCHEMAS = {"agg": "k long, v long", "dedup": "k long, v long", "left": "k long, a long", "right": "k long, b long"}

Row = tuple


@dataclass(frozen=True)
class Sizes:
    """Rows per batch: `agg_rows` for the aggregation over `agg_keys` keys (the early commits come
    from these), half as many for dedup, a tenth for each side of the join."""

    agg_rows: int
    agg_keys: int

    @property
    def dedup_rows(self) -> int:
        return max(self.agg_rows // 2, 1)

    @property
    def join_rows(self) -> int:
        return max(self.agg_rows // 10, 2)


def batch_rows(seed: int, index: int, sizes: Sizes) -> dict[str, list[dict]]:
    """The rows of batch `index` for every source (the same for the same seed and index)."""
    rng = random.Random(seed * 1_000_003 + index)
    agg = [{"k": rng.randrange(sizes.agg_keys), "v": rng.randrange(-50, 100)} for _ in range(sizes.agg_rows)]
    # About half of each batch's dedup keys are new: the key space grows by dedup_rows per batch.
    dedup_keys = [rng.randrange((index + 1) * sizes.dedup_rows) for _ in range(sizes.dedup_rows)]
    dedup = [{"k": k, "v": 3 * k + 1} for k in dedup_keys]
    base, previous = index * sizes.join_rows, (index - 1) * sizes.join_rows
    left = [{"k": base + i, "a": rng.randrange(1000)} for i in range(sizes.join_rows)]
    # Right rows meet left rows of this batch (even i) and of the previous one (odd i, from state).
    right = [{"k": (base if i % 2 == 0 or index == 0 else previous) + i, "b": rng.randrange(1000)}
             for i in range(sizes.join_rows)]
    return {"agg": agg, "dedup": dedup, "left": left, "right": right}


@dataclass
class Model:
    """agg and dedup folded batch by batch; `expected[query][batch]` is the sorted output (the
    join's depends on which files each side read in each batch: see `join_expected`)."""

    seed: int
    sizes: Sizes
    expected: dict[str, dict[int, list[Row]]] = field(default_factory=lambda: {q: {} for q in QUERIES})
    # The aggregation's state by key: the (batch, (n, total)) of every change, oldest first.
    agg_history: dict[int, list[tuple[int, Row]]] = field(default_factory=dict)
    agg_state: dict[int, Row] = field(default_factory=dict)
    dedup_seen: dict[int, int] = field(default_factory=dict)
    batches: int = 0

    def add_batch(self) -> dict[str, list[dict]]:
        """Generate the next batch, fold it into the model, and return its rows by source."""
        index = self.batches
        rows = batch_rows(self.seed, index, self.sizes)
        touched: dict[int, Row] = {}
        for row in rows["agg"]:
            n, total = self.agg_state.get(row["k"], (0, 0))
            self.agg_state[row["k"]] = touched[row["k"]] = (n + 1, total + row["v"])
        for k, value in touched.items():
            self.agg_history.setdefault(k, []).append((index, value))
        self.expected["agg"][index] = sorted((k, n, t) for k, (n, t) in touched.items())

        new_keys: dict[int, int] = {}
        for row in rows["dedup"]:
            if row["k"] not in self.dedup_seen:
                self.dedup_seen[row["k"]] = new_keys[row["k"]] = row["v"]
        self.expected["dedup"][index] = sorted(new_keys.items())

        self.batches += 1
        return rows

    def agg_at(self, key: int, batch: int) -> Row | None:
        """The aggregation's (n, total) for `key` once batch `batch` committed (None: no row yet)."""
        value = None
        for changed_in, state in self.agg_history.get(key, ()):
            if changed_in > batch:
                break
            value = state
        return value


def join_expected(seed: int, sizes: Sizes, files_read: Mapping[str, Mapping[int, Sequence[int]]]) -> dict[int, list[Row]]:
    """The join's output per batch, given the input files (indexes) each side read in each batch
    (`files_read["left"][batch]`, `files_read["right"][batch]`)."""
    rows_of: dict[int, dict[str, list[dict]]] = {}

    def side_rows(side: str, batch: int) -> list[dict]:
        found = []
        for index in files_read.get(side, {}).get(batch, ()):
            if index not in rows_of:
                rows_of[index] = batch_rows(seed, index, sizes)
            found += rows_of[index][side]
        return found

    by_key: dict[str, dict[int, list[int]]] = {"left": {}, "right": {}}
    column = {"left": "a", "right": "b"}
    folded = {"left": 0, "right": 0}  # each side reads its files in order: those below are in state

    def fold_until(side: str, index: int) -> None:
        for earlier in range(folded[side], index):
            for row in side_rows_of_file(side, earlier):
                by_key[side].setdefault(row["k"], []).append(row[column[side]])
        folded[side] = max(folded[side], index)

    def side_rows_of_file(side: str, index: int) -> list[dict]:
        if index not in rows_of:
            rows_of[index] = batch_rows(seed, index, sizes)
        return rows_of[index][side]

    expected = {}
    batches = set(files_read.get("left", {})) | set(files_read.get("right", {}))
    for batch in sorted(batches):
        for side in ("left", "right"):
            files = files_read.get(side, {}).get(batch, ())
            if files:
                fold_until(side, min(files))
        pairs: list[Row] = []
        left_rows, right_rows = side_rows("left", batch), side_rows("right", batch)
        for row in left_rows:
            pairs += [(row["k"], row["a"], b) for b in by_key["right"].get(row["k"], ())]
            by_key["left"].setdefault(row["k"], []).append(row["a"])
        for row in right_rows:
            # Every left row of the key, this batch's included (those pairs were not counted above).
            pairs += [(row["k"], a, row["b"]) for a in by_key["left"].get(row["k"], ())]
            by_key["right"].setdefault(row["k"], []).append(row["b"])
        for side in ("left", "right"):
            files = files_read.get(side, {}).get(batch, ())
            if files:
                folded[side] = max(files) + 1
        expected[batch] = sorted(pairs)
    return expected


def output_differences(got: Sequence[Sequence], want: Sequence[Row], limit: int = 5) -> str | None:
    """None when `got` (any order) is exactly `want`; else what is missing and what is extra."""
    got_rows = sorted(tuple(r) for r in got)
    if got_rows == list(want):
        return None
    remaining = list(want)
    extra = []
    for row in got_rows:
        try:
            remaining.remove(row)
        except ValueError:
            extra.append(row)
    return (f"{len(want)} rows expected, {len(got_rows)} emitted; missing {remaining[:limit]} "
            f"({len(remaining)}), unexpected or duplicated {extra[:limit]} ({len(extra)})")


def check_answer(model: Model, keys: Sequence[int], partitions: Mapping[str, Mapping]) -> list[str]:
    """Problems with one interactive multi-key answer on the aggregation's store.

    `partitions`: partition -> {"batch": id, "values": [[n, total] or None per key]}. A partition
    answers from one committed batch: every value it returns must be exactly the model's state of
    the key at that batch (a torn batch shows some keys of a batch and not others, an uncommitted
    write shows a value no batch had). A key no partition returns must not exist yet at the oldest
    batch answered from (aggregation rows are never removed), and no key is in two partitions."""
    problems = []
    if not partitions:
        return problems
    oldest = min(answer["batch"] for answer in partitions.values())
    for i, key in enumerate(keys):
        owners = []
        for partition, answer in partitions.items():
            value = answer["values"][i]
            if value is None:
                continue
            owners.append(partition)
            want = model.agg_at(key, answer["batch"])
            if tuple(value) != want:
                problems.append(f"key {key} at batch {answer['batch']} (partition {partition}): "
                                f"got {tuple(value)}, model {want}")
        if len(owners) > 1:
            problems.append(f"key {key} answered by partitions {owners}")
        if not owners and model.agg_at(key, oldest) is not None:
            problems.append(f"key {key} missing at batch {oldest}: model {model.agg_at(key, oldest)}")
    return problems
