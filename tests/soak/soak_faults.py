"""Executor SIGKILLs aimed at a phase of the aggregation's stores, by watching real files and tasks.

Runs in the soak driver (it needs the SparkContext's view of running tasks). The harness writes
`commands/<n>.json` ({"id", "phase", "batch", "timeout_s"}); the runner watches the store
directories `checkpoint/agg/state/0/<p>` of the batch's version (batch b writes version b + 1)
and the agg query's running stateful tasks, SIGKILLs an executor JVM as soon as the phase is
observed, and writes `faults/<n>.json`: the phase asked for, whether it was seen (`hit`), what was
seen, the executor and pid, the time of the kill, or `missed` when the phase never showed before
the batch committed (task phases) or the timeout (maintenance phases). Phases:

  * put: a stateful task of the batch is running and its store has written no early-commit
    segment and no changelog of the version yet (its writes are all in memory);
  * early-commit: a segment of the version is being written (`.<v>_<id>-<k>.txseg.<random>.tmp`),
    or the store has written segments of the version and no changelog (it has committed early and
    is writing on: a segment's write is a few milliseconds, easily missed on a busy machine);
  * commit: the version's changelog is being written (its `.tmp`), or it is written while the
    task is still running (the store committed, the task has not reported it);
  * snapshot: maintenance is uploading a snapshot (a `.tmp` under `sst/`, or of a `.snapshot`
    manifest): the executor holding the store's lock file is killed;
  * cleanup: maintenance has just deleted a changelog, segment, manifest or stored file of the store
    (seen between two listings a few milliseconds apart): the lock holder is killed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

from harness import streaming_harness
from harness.cluster_tasks import executor_processes, process_is_gone, running_stateful_tasks, wait_for

TASK_PHASES = ("put", "early-commit", "commit")
MAINTENANCE_PHASES = ("snapshot", "cleanup")
PHASES = TASK_PHASES + MAINTENANCE_PHASES
POLL_S = 0.002
PARTITIONS = ("0", "1")
TMP = re.compile(r"^\.(.+)\.[^.]+\.tmp$")  # `.<name>.<random>.tmp`, docs/ARCHITECTURE.md "Files in a checkpoint"


def listing(directory: Path) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(directory)}
    except FileNotFoundError:
        return set()


def lock_holders() -> dict[int, int]:
    """inode -> pid of every POSIX lock in /proc/locks (a JVM's FileChannel.lock is one)."""
    holders = {}
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "POSIX" and fields[4].isdigit():
            holders[int(fields[5].rsplit(":", 1)[-1])] = int(fields[4])
    return holders


class FaultRunner:
    def __init__(self, sc, work_dir: Path, agg_query) -> None:
        self.sc = sc
        self.app_id = sc.applicationId
        self.work_dir = work_dir
        self.agg_query = agg_query
        self.stores = work_dir / "checkpoint" / "agg" / "state" / "0"

    # -- what the executors are doing ------------------------------------------------------------

    def agg_tasks(self) -> list:
        """The running stateful tasks of the agg query (its job group is its run id)."""
        tracker = self.sc.statusTracker()
        stages = set()
        for job_id in tracker.getJobIdsForGroup(str(self.agg_query.runId)):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                stages.update(info.stageIds)
        return [t for t in running_stateful_tasks(self.sc) if t.stage_id in stages]

    def lock_holder(self, partition: str) -> int | None:
        """The pid of the executor JVM holding the agg store's lock file of `partition`."""
        holders = lock_holders()
        for lock in (self.work_dir / "local" / "agg" / "txstate").glob(f"*/op0-part{partition}-default.lock"):
            try:
                pid = holders.get(lock.stat().st_ino)
            except FileNotFoundError:
                continue
            if pid is not None:
                return pid
        return None

    def running_victim(self, ready: Callable[[str], str | None]) -> dict | None:
        """An agg stateful task on a live executor whose store's files say `ready(partition)`."""
        processes = executor_processes(self.app_id)
        for task in self.agg_tasks():
            seen = ready(str(task.partition)) if task.executor_id in processes else None
            if seen:
                return {"executor": task.executor_id, "pid": processes[task.executor_id],
                        "partition": task.partition, "seen": seen}
        return None

    # -- the phases --------------------------------------------------------------------------------

    def version_files(self, partition: str, version: int) -> tuple[list[str], list[str], list[str]]:
        """Segments, changelogs and in-progress (tmp) files of `version` in the partition's store."""
        names = listing(self.stores / partition)
        segments, changelogs = streaming_harness.version_files(self.stores / partition, version)
        writing = [m.group(1) for n in names if (m := TMP.match(n)) and m.group(1).split("_")[0].split(".")[0] == str(version)]
        return segments, changelogs, writing

    def task_phase_seen(self, phase: str, version: int) -> Callable[[str], str | None]:
        def ready(partition: str) -> str | None:
            segments, changelogs, writing = self.version_files(partition, version)
            if phase == "put" and not segments and not changelogs and not writing:
                return "task running, no segment or changelog of the version yet"
            if phase == "early-commit" and not changelogs:
                if any(w.endswith(".txseg") for w in writing):
                    return f"segment being written ({len(segments)} written before it)"
                if segments and not writing:
                    return f"between early commits ({len(segments)} segments written, no changelog)"
            if phase == "commit":
                if any(w.endswith(".txlog") for w in writing):
                    return "changelog being written"
                if changelogs:
                    return "changelog written, task still running"
            return None
        return ready

    def maintenance_victim(self, phase: str, before: dict[str, set[str]]) -> dict | None:
        for partition in PARTITIONS:
            names = listing(self.stores / partition)
            sst = listing(self.stores / partition / "sst")
            seen = None
            if phase == "snapshot":
                if any(TMP.match(n) for n in sst):
                    seen = "stored file being uploaded"
                elif any((m := TMP.match(n)) and m.group(1).endswith(".snapshot") for n in names):
                    seen = "snapshot manifest being written"
            else:
                current = {n for n in names if not n.startswith(".")} | {"sst/" + n for n in sst if not n.startswith(".")}
                gone = before.get(partition, set()) - current
                before[partition] = current
                if gone:
                    seen = f"deleted {sorted(gone)[:3]} ({len(gone)} files)"
            if seen:
                pid = self.lock_holder(partition)
                if pid is not None:
                    executors = {p: e for e, p in executor_processes(self.app_id).items()}
                    return {"executor": executors.get(pid), "pid": pid, "partition": int(partition), "seen": seen}
        return None

    # -- running commands --------------------------------------------------------------------------

    def run(self, command: dict) -> dict:
        phase, batch = command["phase"], command["batch"]
        version = batch + 1
        deadline = time.monotonic() + command["timeout_s"]
        committed = self.work_dir / "checkpoint" / "agg" / "commits" / str(batch)
        before: dict[str, set[str]] = {}
        victim = None
        while time.monotonic() < deadline and victim is None:
            if phase in TASK_PHASES:
                if committed.exists():
                    break
                victim = self.running_victim(self.task_phase_seen(phase, version))
            else:
                victim = self.maintenance_victim(phase, before)
            if victim is None:
                time.sleep(POLL_S)
        if victim is None:
            missed = ("the batch committed first" if phase in TASK_PHASES and committed.exists()
                      else f"not seen within {command['timeout_s']:.0f} s")
            return {**command, "hit": False, "missed": missed}
        killed_at = time.time()
        os.kill(victim["pid"], signal.SIGKILL)
        died = wait_for(lambda: process_is_gone(victim["pid"]), 30, 0.01) is not None
        return {**command, **victim, "hit": True, "killed_at": killed_at, "died": died}

    def serve(self, stop: threading.Event) -> None:
        """Run each command of `commands/` once, in order of its id, until `stop`."""
        commands, results = self.work_dir / "commands", self.work_dir / "faults"
        results.mkdir(parents=True, exist_ok=True)
        while not stop.wait(0.05):
            for path in sorted(commands.glob("*.json")) if commands.is_dir() else ():
                result_path = results / path.name
                if result_path.exists():
                    continue
                command = json.loads(path.read_text())
                try:
                    result: dict[str, Any] = self.run(command)
                except Exception as error:
                    result = {**command, "hit": False, "missed": f"runner error {type(error).__name__}: {error}"}
                partial = results / f".{path.name}.tmp"
                partial.write_text(json.dumps(result))
                os.replace(partial, result_path)
