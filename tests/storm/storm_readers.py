"""The storm's readers of the aggregation's state, each on a thread of its own, each appending what
it saw to a log under the work directory for storm.py to check against the model at the end:
  * `source.jsonl`: whole-store reads through the txstate data source with `waitMs` (live from the
    running query, or from the checkpoint while the query restarts);
  * `iq.jsonl` and `follower.jsonl`: multi-key interactive queries on the running query and on a
    follower of its checkpoint (soak_driver.interactive_queries).
A read that fails is logged as such; SOURCE_FAILURES_ALLOWED says which failures are not violations."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from soak_driver import append_line
from soak_model import Model

SOURCE_WAIT_MS = 20_000
PARTITIONS = 3  # the storm's spark.sql.shuffle.partitions: the aggregation's store partitions
SOURCE_PAUSE_S = 0.3
# A data-source read fails for no reason a restart explains: a partition no run holds is read
# from the checkpoint. (Interactive queries on a stopped run's query object fail by design, and
# are counted by reason, not checked.)
SOURCE_FAILURES_ALLOWED: tuple[str, ...] = ()


class LogTail:
    """The records appended to a reader's log since the last call: complete lines only, since the
    reader may be writing one."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = 0

    def new_records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        with self.log.open("rb") as file:
            file.seek(self.offset)
            complete = file.read().rpartition(b"\n")[0]
        if not complete:
            return []
        self.offset += len(complete) + 1
        return [json.loads(line) for line in complete.split(b"\n")]


def read_records(log: Path) -> list[dict[str, Any]]:
    """Every complete record of a reader's log."""
    return LogTail(log).new_records()


def read_through_source(spark, checkpoint: Path, log: Path, stop: threading.Event) -> None:
    """The aggregation's whole store through `spark.read.format("txstate")` until `stop`; one read
    after another at first, so that some are planned while batch 0 runs."""
    first_commit = checkpoint / "commits" / "0"
    while not stop.wait(SOURCE_PAUSE_S if first_commit.exists() else 0):
        record: dict[str, Any] = {"at": time.time(), "before_first_commit": not first_commit.exists()}
        try:
            frame = (spark.read.format("txstate").option("waitMs", str(SOURCE_WAIT_MS)).load(str(checkpoint))
                     .select("key.k", "value.*", "partition_id", "batch_id"))  # value: (count, sum)
            record["rows"] = [[int(v) for v in row] for row in frame.collect()]
        except Exception as error:
            record["error"] = f"{type(error).__name__}: {str(error)[:600]}"
        append_line(log, record)


def source_problems(model: Model, state_at: Mapping[int, int], rows: Sequence[Sequence[int]],
                    limit: int = 5) -> tuple[int, list[str]]:
    """The rows checked of one data-source read, and what is wrong with it: a value that is not
    the model's at the batch its partition says it read (`state_at`: a batch's newest input file,
    the model's index; rows of a batch not in it are not checked), a partition seen at two batches
    (a torn read), a key in two partitions; a partition with no rows (every partition holds some
    of the model's keys once a batch is committed, so an empty one was answered without its
    state); and when every partition read the same batch, a key count that is not the model's."""
    problems: list[str] = []
    batch_of: dict[int, set[int]] = {}
    owner: dict[int, int] = {}
    checked = 0
    for k, n, total, partition, batch in rows:
        batch_of.setdefault(partition, set()).add(batch)
        if k in owner and owner[k] != partition:
            problems.append(f"key {k} in partitions {owner[k]} and {partition}")
        owner[k] = partition
        if batch in state_at:
            checked += 1
            want = model.agg_at(k, state_at[batch])
            if (n, total) != want:
                problems.append(f"key {k} at batch {batch} (partition {partition}): got {(n, total)}, model {want}")
    problems += [f"partition {p} read at batches {sorted(b)}" for p, b in batch_of.items() if len(b) > 1]
    problems += [f"partition {p} answered no rows" for p in range(PARTITIONS) if p not in batch_of]
    batches = {b for bs in batch_of.values() for b in bs}
    if len(batches) == 1 and next(iter(batches)) in state_at:
        (batch,) = batches
        keys = sum(1 for k in model.agg_history if model.agg_at(k, state_at[batch]) is not None)
        if keys != len(rows):
            problems.append(f"{len(rows)} keys read at batch {batch}, model {keys}")
    return checked, problems[:limit]


def check_source_reads(model: Model, state_at: Mapping[int, int],
                       records: Iterable[Mapping[str, Any]]) -> tuple[dict[str, int], list[str]]:
    """Counts of the data-source reads in a reader's `records`, and the violations among them (a
    failure for a reason SOURCE_FAILURES_ALLOWED does not name is one)."""
    counts = {"reads": 0, "rows_checked": 0, "failed": 0}
    violations: list[str] = []
    for record in records:
        if "error" in record:
            counts["failed"] += 1
            if not any(reason in record["error"] for reason in SOURCE_FAILURES_ALLOWED):
                violations.append(f"data source read at {record['at']:.3f} failed: {record['error']}")
            continue
        counts["reads"] += 1
        checked, problems = source_problems(model, state_at, record["rows"])
        counts["rows_checked"] += checked
        violations += [f"data source read at {record['at']:.3f}: {p}" for p in problems]
    return counts, violations


def failure_reasons(log: Path) -> Mapping[str, int]:
    """How often each failure reason (or error) came back in an interactive-query log."""
    reasons: dict[str, int] = {}
    for line in log.read_text().splitlines() if log.exists() else ():
        record = json.loads(line)
        for reason in [record["error"].split(":")[0]] if "error" in record else record["failures"].values():
            key = str(reason)[:80]
            reasons[key] = reasons.get(key, 0) + 1
    return reasons
