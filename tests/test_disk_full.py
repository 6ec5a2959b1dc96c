"""A full disk, on real Spark with real RocksDB and a real (tmpfs) file system.

Each test mounts a small tmpfs and runs a counting aggregation over four batches in one query; right
after batch 1 is delivered (inside foreachBatch, so the stores are open), a filler file sized from
`os.statvfs` fills the mount, and batch 2, which writes megabytes of new state, hits ENOSPC:

1. The provider's local directory (`txstate.localDir`) on the mount: RocksDB's memtable flushes fail
   while the batch early-commits (small memtables and a small `maxUncommittedBytes` make RocksDB
   write mid-batch). The batch must fail with `TXSTATE_LOCAL_DISK_FULL`, naming the directory and
   the setting.
2. The query's checkpoint location on the mount: the store's changelog write fails. The batch must
   fail with `TXSTATE_CHECKPOINT_DISK_FULL`, naming the file.

Then the filler goes (and the local directory's mount grows: the big batch's own state needs more
than the small mount), the query restarts on the same checkpoint and runs to the end: every batch's
output, the state row counts and the final state (read back through Spark's state data source)
equal a model computed here. Nothing committed before the failure is lost, and the failed batch is
neither lost nor counted twice.

Mounting needs root: as any other user the tests skip and say why; as root (CI) a mount that
fails fails the test, since the machine allows what it claims to run. The mount is always
unmounted when the test ends.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import pytest

from harness.streaming_harness import (
    PROVIDER_CLASS_CONF,
    BatchCollector,
    InputFiles,
    RunOutput,
    describe_failure,
    held_locks,
    read_sources,
    session_conf,
)

TXSTATE_CONF = "spark.sql.streaming.stateStore.txstate."
MOUNT_SIZE = "16m"
GROWN_MOUNT_SIZE = "64m"
# What the filler leaves free: less than one memtable flush or one changelog of the big batch.
LEAVE_FREE_BYTES = 192 << 10
SOURCES = {"events": "k STRING"}
QUERY_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------------------------
# A small tmpfs and its filler


@contextlib.contextmanager
def tmpfs(mount_point: Path, size: str = MOUNT_SIZE) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `mount_point` for the block; skips the test when not root, fails it
    when root cannot mount, and always unmounts (lazily if a JVM still holds files there)."""
    if os.geteuid() != 0:
        pytest.skip(f"mounting a tmpfs needs root (euid {os.geteuid()}); the disk-full tests run as root in CI")
    mount_point.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs at {mount_point} as root: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=True)


def remount(mount_point: Path, size: str) -> None:
    """Grows (or shrinks) the tmpfs in place; open files stay open."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mount_point)], check=True, capture_output=True)


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def fill(mount_point: Path, leave_free: int = LEAVE_FREE_BYTES) -> Path:
    """Writes a filler file that leaves about `leave_free` bytes free on the mount."""
    filler = mount_point / "filler"
    size = free_bytes(mount_point) - leave_free
    assert size > 0, f"{mount_point} has only {free_bytes(mount_point)} bytes free, less than {leave_free}"
    with filler.open("wb") as out:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            size -= out.write(chunk[: min(size, len(chunk))])
    assert free_bytes(mount_point) <= leave_free + (1 << 20), (
        f"the filler left {free_bytes(mount_point)} bytes free on {mount_point}")
    return filler


# --------------------------------------------------------------------------------------------
# The query and its model


def batches() -> list[list[dict]]:
    """Two small batches that revisit keys, one (BIG_BATCH) that writes megabytes of new state, and
    a small one again. Keys are random hex, so LZ4 barely shrinks them."""
    rng = random.Random(18)
    small = [f"k{i}" for i in range(40)]
    big = [rng.randbytes(100).hex() for _ in range(16_000)]

    def some(n: int) -> list[dict]:
        return [{"k": rng.choice(small)} for _ in range(n)]

    return [some(60), some(60), [{"k": k} for k in big] + some(20), some(60)]


BIG_BATCH = 2


def expected_outputs(all_batches: Sequence[Sequence[Mapping]]) -> tuple[dict[int, list[tuple]], Counter]:
    """Per batch, the update-mode output of `groupBy(k).count()`: every key of the batch with its
    count so far; and the final counts."""
    counts: Counter = Counter()
    outputs = {}
    for batch_id, rows in enumerate(all_batches):
        keys = [row["k"] for row in rows]
        counts.update(keys)
        outputs[batch_id] = sorted(((k, counts[k]) for k in set(keys)), key=repr)
    return outputs, counts


def start_query(spark, inputs: InputFiles, checkpoint: Path, collector: Callable[[Any, int], None],
                conf: Mapping[str, str]):
    with session_conf(spark, conf):
        counts = read_sources(spark, inputs, SOURCES)["events"].groupBy("k").count()
        return (counts.writeStream.outputMode("update")
                .option("checkpointLocation", str(checkpoint))
                .foreachBatch(collector)
                .trigger(availableNow=True)
                .start())


def run_to_end(spark, inputs, checkpoint, collector, conf, what: str) -> None:
    query = start_query(spark, inputs, checkpoint, collector, conf)
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT_S)
    except Exception as error:
        raise AssertionError(f"{what}: the query failed:\n{describe_failure(error)}") from error
    if not finished:
        query.stop()
        raise AssertionError(f"{what}: the query did not finish within {QUERY_TIMEOUT_S:.0f}s")


def run_until_failure(spark, inputs, checkpoint, collector, conf) -> str:
    """Runs the query, which must fail; returns its error's text."""
    query = start_query(spark, inputs, checkpoint, collector, conf)
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT_S)
    except Exception as error:  # StreamingQueryException
        return str(error)
    if not finished:
        query.stop()
        raise AssertionError(f"the query on a full disk neither failed nor finished within {QUERY_TIMEOUT_S:.0f}s")
    raise AssertionError("the query finished although its disk was full; nothing hit ENOSPC")


def read_state(spark, checkpoint: Path) -> Counter:
    state = spark.read.format("statestore").load(str(checkpoint)).select("key.k", "value.count").collect()
    return Counter({row[0]: row[1] for row in state})


class FillingCollector:
    """Collects like BatchCollector and fills the mount right after batch `fill_after` is delivered,
    while the query runs: its providers are open, so the next batch's own writes hit ENOSPC."""

    def __init__(self, collector: BatchCollector, mount_point: Path, fill_after: int) -> None:
        self.collector = collector
        self.mount_point = mount_point
        self.fill_after = fill_after
        self.filler: Path | None = None

    def __call__(self, df, batch_id: int) -> None:
        self.collector(df, batch_id)
        if batch_id == self.fill_after and self.filler is None:
            self.filler = fill(self.mount_point)


def wait_for_released_locks(local_dir: Path, timeout_s: float = 30.0) -> None:
    """Waits until no provider of the failed query holds a store lock under `local_dir` (Spark's
    maintenance unloads them), so the restart reopens the same local databases."""
    deadline = time.monotonic() + timeout_s
    while held := held_locks(local_dir):
        if time.monotonic() > deadline:
            raise AssertionError(f"store locks still held {timeout_s:.0f}s after the query failed: {held}")
        time.sleep(0.25)


def fail_then_resume(spark, work_dir: Path, conf: Mapping[str, str], checkpoint: Path, full_mount: Path,
                     local_dir: Path | None = None) -> str:
    """Runs every batch in one query that fills the mount after batch BIG_BATCH - 1, so the big
    batch fails; then the filler goes and the query, restarted, runs to the end. Checks every
    batch's output and the final state against the model; returns the failure's text."""
    all_batches = batches()
    inputs = InputFiles(work_dir / "input", list(SOURCES))
    output = RunOutput(provider=conf[PROVIDER_CLASS_CONF])
    collector = BatchCollector(output)
    for index, rows in enumerate(all_batches):
        inputs.write_batch(index, {"events": rows})
    filling = FillingCollector(collector, full_mount, fill_after=BIG_BATCH - 1)
    error = run_until_failure(spark, inputs, checkpoint, filling, conf)
    assert filling.filler is not None, f"the query failed before the disk was filled:\n{error[:4000]}"
    assert sorted(output.batches) == list(range(BIG_BATCH)), (
        f"batches {sorted(output.batches)} were delivered; the big batch {BIG_BATCH} must fail on the full disk")

    filling.filler.unlink()
    if local_dir is not None:
        # The big batch's own state (megabytes per store, compaction's temporary copies, a staged
        # snapshot's hard links) needs more than the small mount held: space comes back as a bigger one.
        remount(full_mount, GROWN_MOUNT_SIZE)
        wait_for_released_locks(local_dir)
    run_to_end(spark, inputs, checkpoint, collector, conf, "the restart once space is back")
    want, final_counts = expected_outputs(all_batches)
    for batch_id in sorted(set(want) | set(output.batches)):
        got = output.batches.get(batch_id)
        assert got == want[batch_id], (
            f"batch {batch_id}: {len(want[batch_id])} rows expected, got {None if got is None else len(got)}; "
            f"first differences: {[r for r in want[batch_id] if r not in (got or [])][:5]}")
    state = read_state(spark, checkpoint)
    assert state == final_counts, (
        f"the final state differs from the model: {len(state)} keys against {len(final_counts)}; "
        f"differing keys: {[k for k in set(state) | set(final_counts) if state[k] != final_counts[k]][:5]}")
    return error


# --------------------------------------------------------------------------------------------
# Tests


def test_full_local_directory_fails_the_batch_clearly_and_the_query_resumes_exactly(
        spark, work_dir: Path, candidate_provider: str) -> None:
    with tmpfs(work_dir / "local") as local:
        conf = {
            PROVIDER_CLASS_CONF: candidate_provider,
            TXSTATE_CONF + "localDir": str(local),
            # RocksDB writes mid-batch: 1 MiB memtables fill while the batch early-commits every 256 KiB.
            TXSTATE_CONF + "writeBufferSizeMB": "1",
            TXSTATE_CONF + "maxUncommittedBytes": "256k",
        }
        error = fail_then_resume(spark, work_dir, conf, work_dir / "checkpoint", local, local_dir=local)
    assert "TXSTATE_LOCAL_DISK_FULL" in error, f"the error does not say the local disk is full:\n{error[:4000]}"
    assert str(local) in error, f"the error does not name the local directory {local}:\n{error[:4000]}"
    assert TXSTATE_CONF + "localDir" in error, f"the error does not name the setting to change:\n{error[:4000]}"


def test_full_checkpoint_location_fails_the_batch_clearly_and_the_query_resumes_exactly(
        spark, work_dir: Path, candidate_provider: str) -> None:
    with tmpfs(work_dir / "ckpt") as mount:
        checkpoint = mount / "checkpoint"
        conf = {PROVIDER_CLASS_CONF: candidate_provider}
        error = fail_then_resume(spark, work_dir, conf, checkpoint, mount)
    assert "TXSTATE_CHECKPOINT_DISK_FULL" in error, f"the error does not say the checkpoint is full:\n{error[:4000]}"
    assert str(checkpoint / "state") in error, f"the error does not name the file:\n{error[:4000]}"
