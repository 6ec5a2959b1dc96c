"""What the local-cluster fault jobs and their tests share.

The fault tests (test_executor_failure.py, test_bounded_memory.py) run a job script in its own
process with its own SparkContext on `local-cluster[2,1,1024]`, whose executors are real JVM
processes. This module holds:
  * for the tests: running such a job script in its own process group and reading its report;
  * for the jobs: their session on `local-cluster` (`local_cluster_session`; used by
    native_memory_job.py), the application's executors (ids and the pids of their JVMs), the running tasks
    of the stateful stage, and the executor process to SIGKILL to interrupt one of those tasks.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, Sequence, TypeVar

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------
# For the jobs: their own session


def local_cluster_session(master: str, app_name: str, settings: dict[str, str]):
    """A SparkSession on `master` (a `local-cluster[...]`) with `settings`, its log at WARN."""
    import pyspark

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


# --------------------------------------------------------------------------------------------
# For the tests: run a job script


def log_excerpt(log: str, limit: int = 60) -> str:
    """The error lines of a job's log, for assertion messages."""
    lines = [l for l in log.splitlines() if any(w in l for w in ("ERROR", "Exception", "Caused by", "Error:"))]
    return "\n".join(lines[:limit])


def run_job_script(script: Path, args: Sequence[str], work_dir: Path, jar: Path, timeout_s: float,
                   what: str = "") -> tuple[dict, str]:
    """Runs `script --result <work_dir>/result.json *args` in its own process group (on a timeout
    the driver JVM and its executors all go with it); returns the JSON report and the job's log.

    Fails the calling test (pytest.fail) on a timeout, or when the job exits non-zero or writes no
    report. `what` names the job in those failures (default: the script's name)."""
    import pytest

    what = what or script.name
    work_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TXSTATE_SPARK_JAR=str(jar), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    result = work_dir / "result.json"
    log_path = work_dir / "job.log"
    command = [sys.executable, str(script), *args, "--result", str(result)]
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True, cwd=str(REPO_ROOT))
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            pytest.fail(f"{what} did not finish within {timeout_s:.0f} s "
                        f"(log: {log_path}):\n{log_excerpt(log_path.read_text())}")
    text = log_path.read_text()
    if code != 0 or not result.is_file():
        pytest.fail(f"{what} exited with {code} (log: {log_path}):\n{log_excerpt(text)}")
    return json.loads(result.read_text()), text


def check_killed_before_commit(report: dict, log: str, kill_batch: int, min_segments: int) -> None:
    """Asserts, from an executor_failure_job.py report and log, that the job ran to the end and its
    kill came in the middle of the kill batch's state writes: the killed task's store had written
    `min_segments` early-commit segments of the batch's version and no changelog of it, the batch
    had not committed, the executor JVM died with the running stateful task, and the task was
    retried: the version's changelog was written after the kill."""
    context = f"\njob log excerpt:\n{log_excerpt(log)}"
    kill = report["kill"]
    assert not report["errors"], f"{report['errors']}{context}"
    assert report["query_exception"] is None, f"{report['query_exception']}{context}"

    # The kill came in the middle of the version's writes, before the store committed it.
    assert kill is not None, f"no executor was killed{context}"
    assert len(kill["segments_at_kill"]) >= min_segments, kill
    assert not kill["changelogs_at_kill"], (
        f"the killed task's store had committed version {report['version']} before the kill: {kill}")
    assert not kill["batch_committed_at_kill"], f"batch {kill_batch} had committed before the kill: {kill}"
    # The version's changelog was written afterwards, by the retry.
    assert report["changelogs_after"] and all(
        mtime > kill["killed_at"] for mtime in report["changelogs_after"].values()), (
        f"changelogs of version {report['version']} after the query {report['changelogs_after']}, "
        f"the kill at {kill['killed_at']}")

    # The executor really died, and the running stateful task went with it.
    assert kill["died"], f"executor {kill['executor_id']} (pid {kill['pid']}) was still alive after SIGKILL"
    assert kill["executor_id"] not in report["executors_after"], report["executors_after"]
    assert kill["pid"] not in report["executor_processes_after"].values(), report["executor_processes_after"]
    assert f"ExecutorLostFailure (executor {kill['executor_id']} exited" in log, (
        f"executor {kill['executor_id']} was killed but no running task was lost with it{context}")


# --------------------------------------------------------------------------------------------
# For the jobs: executors and their running stateful tasks


def store_entries(app_dir: Path) -> list[Path]:
    """What the executors of the application in `app_dir` ($SPARK_HOME/work/<app>) hold under their
    local txstate directory: one directory per open store (and its staging area); none once they exit."""
    return sorted(app_dir.glob("*/txstate/op*"))


def wait_for(predicate: Callable[[], T], timeout_s: float, step_s: float = 0.1) -> T | None:
    """Polls `predicate` until it returns something truthy (returned), or None after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step_s)
    return None


@contextlib.contextmanager
def alongside(target: Callable[[], None] | None, join_timeout_s: float) -> Iterator[None]:
    """Runs `target` (if any) in a daemon thread while the block runs (e.g. a killer watching the
    tasks of the action the block starts); after the block, waits up to join_timeout_s for it."""
    thread = None
    if target is not None:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
    try:
        yield
    finally:
        if thread is not None:
            thread.join(join_timeout_s)


def executor_processes(app_id: str) -> dict[str, int]:
    """Executor id -> pid of this application's CoarseGrainedExecutorBackend JVMs."""
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in args if a]
        if not any(a.endswith("CoarseGrainedExecutorBackend") for a in argv):
            continue
        if app_id not in argv:
            continue
        if "--executor-id" in argv:
            found[argv[argv.index("--executor-id") + 1]] = int(entry.name)
    return found


def process_is_gone(pid: int) -> bool:
    """True once `pid` has exited: no /proc entry left, or a zombie waiting for its parent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")


def executor_ids(sc) -> list[str]:
    """The ids of the executors registered with the SparkContext (the driver is not one)."""
    ids = sc._jsc.sc().getExecutorIds()
    return sorted(ids.apply(i) for i in range(ids.size()))


class RunningTask(NamedTuple):
    executor_id: str
    stage_id: int
    partition: int


def running_stateful_tasks(sc, partitions: int = 2) -> list[RunningTask]:
    """The running tasks of the stateful stage, taken to be the active stage with one task per
    shuffle partition (`spark.sql.shuffle.partitions`, 2 in these jobs)."""
    tracker = sc.statusTracker()
    store = sc._jsc.sc().statusStore()
    running = []
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if not info or info.numTasks != partitions:
            continue
        tasks = store.taskList(stage_id, info.currentAttemptId, 10)
        for i in range(tasks.size()):
            task = tasks.apply(i)
            if task.status() == "RUNNING":
                running.append(RunningTask(task.executorId(), stage_id, task.index()))
    return running


class Victim(NamedTuple):
    executor_id: str
    pid: int
    stage_id: int
    partition: int


def stateful_task_to_kill(sc, app_id: str, ready: Callable[[int], bool] = lambda partition: True
                          ) -> Victim | None:
    """A running stateful task on a live executor JVM whose partition passes `ready(partition)`
    (for example: its store has committed early and not committed yet), with that JVM's pid; else None."""
    processes = executor_processes(app_id)
    for task in running_stateful_tasks(sc):
        if task.executor_id in processes and ready(task.partition):
            return Victim(task.executor_id, processes[task.executor_id], task.stage_id, task.partition)
    return None
