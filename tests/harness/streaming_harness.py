"""Run one streaming query on a chosen state store provider and record what it emitted.

The operator-equivalence tests run every query twice over the same input files, once on Spark's
HDFS-backed provider (the reference) and once on the candidate, and compare the output batch by
batch. This module holds what those runs share: the provider names, the session settings, the input
files, the per-batch collector and the comparison. It knows nothing about particular operators.

How one run goes (`run_case`):
  * every batch of input is one JSON file per source, written before the query run that reads it,
    with strictly increasing modification times, so `maxFilesPerTrigger=1` turns file `i` into
    micro-batch `i` on every provider;
  * the query runs with `trigger(availableNow=True)` until it has read every file written so far,
    then stops; the case's restart points split the batches into several such runs on one
    checkpoint, so the later runs reload state from the checkpoint;
  * `foreachBatch` collects each batch's rows into the driver, keyed by batch id; a batch delivered
    twice must carry the same rows both times;
  * the state operators' row counts (`numRowsTotal` and friends) are kept per batch from the
    query progress, because `numRowsTotal` is reported by the provider itself.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
from importlib import metadata
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]

# The provider under test. Everything that runs "the candidate" reads candidate_provider().
TXSTATE_PROVIDER = "txstate.spark.TxStateStoreProvider"
# Overrides the candidate, e.g. with ROCKSDB_PROVIDER to check the harness itself.
CANDIDATE_PROVIDER_ENV = "TXSTATE_TEST_CANDIDATE_PROVIDER"
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

PROVIDER_CLASS_CONF = "spark.sql.streaming.stateStore.providerClass"
CHECKPOINT_FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"

# The Spark line the tests run on (the installed pyspark's), and what it has that 3.5 lacks:
# checkpoint format v2, and operator metadata (the names `stateStoreSave`, ...; on 3.5 operators are
# known by id only, and a key's owning partition is not known without the name).
SPARK_LINE = tuple(int(p) for p in metadata.version("pyspark").split(".")[:2])
HAS_CHECKPOINT_FORMAT_V2 = SPARK_LINE >= (4, 0)
HAS_OPERATOR_NAMES = SPARK_LINE >= (4, 0)

# Event times in the test data are seconds after this instant (UTC).
EVENT_TIME_ORIGIN = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)

# The state-operator progress fields that must be equal across providers, batch by batch.
STATE_PROGRESS_FIELDS = ("numRowsTotal", "numRowsUpdated", "numRowsRemoved", "numRowsDroppedByWatermark")


def candidate_provider() -> str:
    """The provider class under test: $TXSTATE_TEST_CANDIDATE_PROVIDER, else txstate's."""
    return os.environ.get(CANDIDATE_PROVIDER_ENV, "").strip() or TXSTATE_PROVIDER


def plugin_jar() -> Path:
    """The txstate-spark jar: $TXSTATE_SPARK_JAR, else the one `make jar` builds in target/ for the
    installed pyspark's Spark line."""
    from_env = os.environ.get("TXSTATE_SPARK_JAR", "").strip()
    version = (REPO_ROOT / "VERSION").read_text().strip()
    line = ".".join(map(str, SPARK_LINE))
    scala = "2.12" if SPARK_LINE < (4, 0) else "2.13"  # pyspark 3.5 ships Scala 2.12, 4.x 2.13
    jar = Path(from_env) if from_env else REPO_ROOT / "target" / f"txstate-spark-{line}_{scala}-{version}.jar"
    if not jar.is_file():
        raise FileNotFoundError(
            f"txstate-spark jar not found at {jar} (from "
            f"{'$TXSTATE_SPARK_JAR' if from_env else 'the default target/ path'}). "
            "Build it with `make jar` (or `build/sbt package`), or point TXSTATE_SPARK_JAR at it."
        )
    return jar.resolve()


def spark_settings(jar: Path) -> dict[str, str]:
    """Session settings shared by the local test session and the local-cluster job."""
    return {
        "spark.jars": str(jar),
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        # Maintenance (snapshots, cleanup) runs often and snapshots come every two versions, so the
        # few batches of a test exercise snapshot upload, cleanup and loading from a snapshot.
        "spark.sql.streaming.stateStore.maintenanceInterval": "1s",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
        "spark.sql.streaming.minBatchesToRetain": "3",
        "spark.sql.streaming.numRecentProgressUpdates": "1000",
    }


def event_time(seconds: float) -> str:
    """An ISO-8601 UTC timestamp `seconds` after EVENT_TIME_ORIGIN, as the JSON source reads it."""
    instant = EVENT_TIME_ORIGIN + dt.timedelta(seconds=seconds)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def event_datetime(seconds: float) -> dt.datetime:
    """The naive UTC datetime PySpark returns for event_time(seconds) in a UTC session."""
    return (EVENT_TIME_ORIGIN + dt.timedelta(seconds=seconds)).replace(tzinfo=None)


@contextlib.contextmanager
def session_conf(spark, settings: Mapping[str, str | None]) -> Iterator[None]:
    """Set SQL confs for the duration of the block (None unsets), then restore the old values."""
    previous: dict[str, str | None] = {}
    for key, value in settings.items():
        previous[key] = spark.conf.get(key, None)
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


# --------------------------------------------------------------------------------------------
# Cases


Rows = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class StreamCase:
    """One stateful query and its input, batch by batch.

    sources: source name -> DDL schema; every source gets one input file per batch.
    batches: per micro-batch, source name -> rows (a missing source gets an empty file).
    build: turns the streaming DataFrames (by source name) into the query's result DataFrame.
    restarts: batch indexes before which the query is stopped and started again on the same
      checkpoint, e.g. (3,) runs batches 0..2, stops, then runs batches 3.. in a new query.
    check: asserts, on the reference output, that the data really exercises what the case is
      about (evictions happened, null-padded rows came out, ...), so a bland data set cannot
      make the equivalence trivially true.
    """

    name: str
    sources: Mapping[str, str]
    batches: Sequence[Mapping[str, Rows]]
    build: Callable[[Mapping[str, Any]], Any]
    output_mode: str
    restarts: tuple[int, ...]
    check: Callable[["RunOutput"], None] = lambda output: None
    key_columns: Mapping[str, str] = field(default_factory=dict)

    def runs(self) -> list[range]:
        """The batch index ranges of the successive query runs."""
        edges = [0, *sorted(self.restarts), len(self.batches)]
        assert all(0 < r < len(self.batches) for r in self.restarts), self.restarts
        return [range(a, b) for a, b in zip(edges, edges[1:])]


@dataclass
class RunOutput:
    """What one provider emitted for a case: rows and state-operator counts per batch id."""

    provider: str
    batches: dict[int, list[tuple]] = field(default_factory=dict)
    state_progress: dict[int, list[tuple]] = field(default_factory=dict)
    run_batch_ids: list[list[int]] = field(default_factory=list)
    # The raw StreamingQueryProgress of every batch (as dicts), by batch id: custom metrics live here.
    progress: dict[int, dict] = field(default_factory=dict)

    def all_rows(self) -> list[tuple]:
        return [row for batch_id in sorted(self.batches) for row in self.batches[batch_id]]


def to_plain(value: Any) -> Any:
    """A Row (possibly nested) as plain tuples, so outputs compare and print simply."""
    if isinstance(value, tuple):  # Row is a tuple
        return tuple(to_plain(v) for v in value)
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def sorted_rows(rows) -> list[tuple]:
    return sorted((to_plain(r) for r in rows), key=repr)


class BatchCollector:
    """A foreachBatch function that keeps every batch's rows in the driver, keyed by batch id."""

    def __init__(self, output: RunOutput) -> None:
        self.output = output
        self.delivered: list[int] = []

    def __call__(self, df, batch_id: int) -> None:
        rows = sorted_rows(df.collect())
        earlier = self.output.batches.get(batch_id)
        if earlier is not None and earlier != rows:
            # Raised inside foreachBatch, this fails the query: a re-delivered batch must repeat.
            raise AssertionError(
                f"batch {batch_id} was delivered twice with different rows: first {earlier}, "
                f"then {rows}"
            )
        self.output.batches[batch_id] = rows
        self.delivered.append(batch_id)


class InputFiles:
    """One directory per source; batch i is the file batch-000i.json in each of them."""

    def __init__(self, root: Path, sources: Sequence[str]) -> None:
        self.root = root
        self.dirs = {name: root / name for name in sources}
        for path in self.dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        # Recent (the file source drops files older than maxFileAge relative to the newest) and in
        # the past, ten seconds apart so file order never depends on timestamp granularity.
        self.first_mtime = int(time.time()) - 10_000

    def write_batch(self, index: int, rows_by_source: Mapping[str, Rows]) -> None:
        unknown = set(rows_by_source) - set(self.dirs)
        assert not unknown, f"batch {index} names unknown sources {sorted(unknown)}"
        for name, directory in self.dirs.items():
            final = directory / f"batch-{index:04d}.json"
            # The file source ignores names starting with '.', so the half-written file is unseen.
            partial = directory / f".batch-{index:04d}.json.tmp"
            with partial.open("w") as out:
                for row in rows_by_source.get(name, ()):
                    out.write(json.dumps(row, sort_keys=True) + "\n")
            mtime = self.first_mtime + 10 * index
            os.utime(partial, (mtime, mtime))
            os.replace(partial, final)


def read_sources(spark, inputs: InputFiles, sources: Mapping[str, str]) -> dict[str, Any]:
    return {
        name: spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1).json(str(inputs.dirs[name]))
        for name, ddl in sources.items()
    }


def _state_progress(progress: Mapping[str, Any]) -> list[tuple]:
    return [
        (op.get("operatorName"), *(op.get(f) for f in STATE_PROGRESS_FIELDS))
        for op in progress.get("stateOperators", [])
    ]


def recorded_provider(checkpoint: Path) -> str | None:
    """The provider class the checkpoint's newest offset-log entry says the query ran with."""
    entries = [p for p in (checkpoint / "offsets").glob("[0-9]*") if p.name.isdigit()]
    if not entries:
        return None
    newest = max(entries, key=lambda p: int(p.name))
    for line in newest.read_text().splitlines():
        if line.startswith("{") and '"conf"' in line:
            return json.loads(line).get("conf", {}).get(PROVIDER_CLASS_CONF)
    return None


def offset_log_times(checkpoint: Path) -> dict[int, int]:
    """Each batch's batchTimestampMs (the time state TTL measures against), as Spark recorded it in
    the offset log. Cleanup keeps only the last few entries: read it right after each batch."""
    times = {}
    for entry in (checkpoint / "offsets").iterdir():
        if entry.name.isdigit():
            metadata = entry.read_text().split("\n")[1]
            times[int(entry.name)] = int(json.loads(metadata)["batchTimestampMs"])
    return times


def describe_failure(error: BaseException, limit: int = 6000) -> str:
    text = str(error)
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more chars)"


def await_available_now(query, timeout_s: float, what: str) -> None:
    """Wait for an availableNow query to finish; fail (after stopping it) on timeout or error."""
    try:
        finished = query.awaitTermination(timeout_s)
    except Exception as error:  # StreamingQueryException and py4j errors
        raise AssertionError(f"{what}: the query failed:\n{describe_failure(error)}") from error
    if not finished:
        last = query.lastProgress
        query.stop()
        raise AssertionError(
            f"{what}: the query did not finish within {timeout_s:.0f}s; last progress: "
            f"{json.dumps(last)[:2000] if last else None}"
        )
    if query.exception() is not None:
        raise AssertionError(f"{what}: the query failed:\n{describe_failure(query.exception())}")


def progress_dicts(query) -> list[dict]:
    """The query's recent progress as plain dicts: pyspark 4 gives progress objects (with .json), 3.5 dicts."""
    return [json.loads(p.json) if hasattr(p, "json") else dict(p) for p in query.recentProgress]


def run_case(
    spark,
    case: StreamCase,
    provider: str,
    work_dir: Path,
    extra_conf: Mapping[str, str | None] | None = None,
    timeout_s: float = 180.0,
    after_run: Callable[[int, Path], None] | None = None,
    expect_provider: str | tuple[str, ...] | None = None,
    checkpoint: Path | None = None,
) -> RunOutput:
    """Run the case's query on `provider`, restarting at the case's restart points.

    `after_run(run_index, checkpoint)`, when given, is called after each run's query has stopped
    (for example to inspect or damage the checkpoint before the next run starts).
    `expect_provider`: the provider (or providers) the checkpoint may record at the end (default
    `provider`; another one when `after_run` migrated the checkpoint).
    `checkpoint`: where the query's checkpoint goes (default `work_dir / "checkpoint"`); any object
    with pathlib.Path's reading methods whose str() Spark can write to, e.g. a
    dfs_cluster.WebHdfsPath for a checkpoint on HDFS."""
    inputs = InputFiles(work_dir / "input", list(case.sources))
    checkpoint = checkpoint if checkpoint is not None else work_dir / "checkpoint"
    output = RunOutput(provider=provider)
    collector = BatchCollector(output)
    conf = {PROVIDER_CLASS_CONF: provider, **(extra_conf or {})}
    for run_index, batch_range in enumerate(case.runs()):
        for index in batch_range:
            inputs.write_batch(index, case.batches[index])
        delivered_before = len(collector.delivered)
        # The provider class is read when the query starts (and, on a restart, taken from the
        # checkpoint's offset log), so setting it on the session right before start() is enough.
        with session_conf(spark, conf):
            result = case.build(read_sources(spark, inputs, case.sources))
            query = (
                result.writeStream.queryName(f"{case.name}_run{run_index}")
                .outputMode(case.output_mode)
                .option("checkpointLocation", str(checkpoint))
                .foreachBatch(collector)
                .trigger(availableNow=True)
                .start()
            )
        await_available_now(query, timeout_s, f"{case.name} on {provider}, run {run_index}")
        for progress in query.recentProgress:
            output.state_progress[progress["batchId"]] = _state_progress(progress)
            output.progress[progress["batchId"]] = progress
        output.run_batch_ids.append(collector.delivered[delivered_before:])
        if after_run is not None:
            after_run(run_index, checkpoint)
    recorded = recorded_provider(checkpoint)
    expected = expect_provider or provider
    assert recorded in ((expected,) if isinstance(expected, str) else expected), (
        f"{case.name}: the checkpoint's offset log records provider {recorded!r}, expected "
        f"{expected!r}"
    )
    return output


def custom_metric(progress: Mapping[str, Any], name: str) -> int:
    """A state store custom metric of one batch's progress, summed over its state operators."""
    return sum(int(op.get("customMetrics", {}).get(name, 0)) for op in progress.get("stateOperators", []))


def assert_same_output(reference: RunOutput, candidate: RunOutput, case_name: str) -> None:
    """Candidate must emit exactly the reference's rows and state counts, batch by batch."""
    problems: list[str] = []
    if sorted(reference.batches) != sorted(candidate.batches):
        problems.append(
            f"batch ids differ: {reference.provider} emitted {sorted(reference.batches)}, "
            f"{candidate.provider} emitted {sorted(candidate.batches)}"
        )
    for batch_id in sorted(set(reference.batches) | set(candidate.batches)):
        want = reference.batches.get(batch_id, [])
        got = candidate.batches.get(batch_id, [])
        if want != got:
            missing = [r for r in want if r not in got]
            extra = [r for r in got if r not in want]
            problems.append(
                f"batch {batch_id}: {len(want)} rows expected, {len(got)} emitted; "
                f"missing {missing[:10]}; unexpected {extra[:10]}"
            )
    for batch_id in sorted(set(reference.state_progress) | set(candidate.state_progress)):
        want = reference.state_progress.get(batch_id)
        got = candidate.state_progress.get(batch_id)
        if want != got:
            problems.append(
                f"batch {batch_id}: state operator counts (name, {', '.join(STATE_PROGRESS_FIELDS)}) "
                f"differ: reference {want}, candidate {got}"
            )
    assert not problems, f"{case_name}: {candidate.provider} differs from {reference.provider}:\n" + "\n".join(
        problems
    )


# --------------------------------------------------------------------------------------------
# A txstate checkpoint's files (the candidate's layout; other providers' files are not listed)

CHANGELOG = re.compile(r"^(\d+)(?:_([0-9a-fA-F-]+))?\.txlog$")
SNAPSHOT = re.compile(r"^(\d+)_([0-9a-fA-F-]+)\.snapshot$")
# An early-commit segment: the k-th early commit of an open version's attempt (checkpoint id).
SEGMENT = re.compile(r"^(\d+)_([0-9a-fA-F-]+)-(\d+)\.txseg$")


@dataclass
class StoreFiles:
    """What one store instance's checkpoint directory holds."""

    path: Path
    changelogs: dict[int, list[Path]] = field(default_factory=dict)
    snapshots: dict[int, list[Path]] = field(default_factory=dict)
    stored: list[Path] = field(default_factory=list)

    @property
    def latest(self) -> int:
        return max(self.changelogs)

    def signature(self) -> tuple:
        """Names and sizes of every file, to notice any change."""
        files = [*(p for ps in self.changelogs.values() for p in ps),
                 *(p for ps in self.snapshots.values() for p in ps), *self.stored]
        sizes = []
        for p in files:
            try:
                sizes.append((str(p), p.stat().st_size))
            except FileNotFoundError:  # deleted by a cleanup since the listing
                pass
        return tuple(sorted(sizes))


def store_dirs(checkpoint: Path) -> list[Path]:
    """Every store instance directory of the checkpoint: those holding changelogs."""
    return sorted({p.parent for p in (checkpoint / "state").rglob("*.txlog")})


def list_store(directory: Path) -> StoreFiles:
    """One store instance's changelogs and snapshot manifests by version, and its stored files."""
    files = StoreFiles(directory)
    for entry in directory.iterdir():
        if m := CHANGELOG.match(entry.name):
            files.changelogs.setdefault(int(m.group(1)), []).append(entry)
        elif m := SNAPSHOT.match(entry.name):
            files.snapshots.setdefault(int(m.group(1)), []).append(entry)
    sst = directory / "sst"
    if sst.is_dir():
        files.stored = sorted(p for p in sst.iterdir() if p.is_file() and not p.name.startswith("."))
    return files


def list_checkpoint(checkpoint: Path) -> list[StoreFiles]:
    """Every store instance of the checkpoint, in path order (operator, partition, store)."""
    stores = [list_store(d) for d in store_dirs(checkpoint)]
    assert stores, f"no store directory with changelogs under {checkpoint / 'state'}"
    return stores


def wait_for_quiet_checkpoint(
    checkpoint: Path,
    ready: Callable[[list[StoreFiles]], bool] = lambda stores: True,
    settle_s: float = 3.0,
    timeout_s: float = 90.0,
) -> list[StoreFiles]:
    """After a query stopped: wait until `ready(listing)` holds and no file changed for settle_s.

    Spark's maintenance thread (every second here) uploads staged snapshots and cleans up, also
    once more when it unloads the stopped query's providers; a listing that is ready and has not
    changed for a few maintenance rounds is what the provider leaves behind."""
    deadline = time.monotonic() + timeout_s
    last_signature, stable_since = None, time.monotonic()
    while True:
        stores = list_checkpoint(checkpoint)
        signature = tuple(s.signature() for s in stores)
        now = time.monotonic()
        if signature != last_signature:
            last_signature, stable_since = signature, now
        elif ready(stores) and now - stable_since >= settle_s:
            return stores
        if now > deadline:
            raise AssertionError(
                f"the checkpoint {checkpoint} did not settle within {timeout_s:.0f}s (ready: {ready(stores)}): "
                + describe_listing(stores)
            )
        time.sleep(0.25)


def copy_of_stopped(checkpoint: Path, copy: Path) -> Path:
    """A copy of a stopped query's checkpoint, which nothing writes into any more.

    After the stop, Spark's maintenance may still write into the checkpoint, on any provider: it
    unloads the stopped query's providers after a last round (a snapshot written to a temporary
    file and renamed, a cleanup deleting old files). Tests that compare a checkpoint's bytes before
    and after something read it take this copy instead. A copy that meets a vanishing file is made
    again; temporary files (and their checksums) are left out."""
    for _ in range(5):
        try:
            shutil.copytree(checkpoint, copy, ignore=shutil.ignore_patterns(".*.tmp", ".*.tmp.crc"))
            return copy
        except (shutil.Error, FileNotFoundError):
            shutil.rmtree(copy, ignore_errors=True)
            time.sleep(0.5)
    raise AssertionError(f"{checkpoint} kept changing while it was copied")


def describe_listing(stores: list[StoreFiles]) -> str:
    """A one-line summary of a listing, for assertion messages."""
    return "; ".join(
        f"{'/'.join(s.path.parts[-2:])}: changelogs {sorted(s.changelogs)}, snapshots {sorted(s.snapshots)}, "
        f"{len(s.stored)} stored files"
        for s in stores
    )


def version_files(directory: Path, version: int) -> tuple[list[str], list[str]]:
    """The early-commit segments and the changelogs of `version` in one store directory, by name
    (the segments of every attempt; both lists are empty while the directory does not exist)."""
    segments, changelogs = [], []
    try:
        names = sorted(p.name for p in directory.iterdir())
    except FileNotFoundError:
        return [], []
    for name in names:
        if (m := SEGMENT.match(name)) and int(m.group(1)) == version:
            segments.append(name)
        elif (m := CHANGELOG.match(name)) and int(m.group(1)) == version:
            changelogs.append(name)
    return segments, changelogs


# --------------------------------------------------------------------------------------------
# A stable txstate.localDir


def held_locks(local_dir: Path) -> list[Path]:
    """The store lock files under local_dir that some process (a Spark JVM) still holds."""
    held = []
    for lock_file in local_dir.rglob("*.lock"):
        with lock_file.open("a") as f:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                held.append(lock_file)
            else:
                fcntl.lockf(f, fcntl.LOCK_UN)
    return held
