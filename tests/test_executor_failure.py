"""A streaming aggregation survives losing an executor JVM mid-batch, with exact results.

The job runs in its own process (executor_failure_job.py) on `local-cluster[2,1,1024]`, so its
executors are real JVM processes: one of them is SIGKILLed while the stateful tasks of a batch run.
Spark retries the lost tasks on the surviving executor (and re-runs the lost shuffle output), the
standalone worker launches a replacement executor, and the state stores of the killed executor are
rebuilt from the checkpoint. Every batch's output must still be exactly the running counts computed
here from the input.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
JOB = TESTS_DIR / "executor_failure_job.py"
JOB_TIMEOUT_S = 420  # the job itself takes about 90 s on two cores
BATCHES = 8
KILL_BATCH = 3


def expected_updates(input_batches: list[list[dict]]) -> list[list[list]]:
    """Per batch, the update-mode rows [k, count, sum] for the keys that batch touched."""
    totals: dict[str, tuple[int, int]] = {}
    expected = []
    for rows in input_batches:
        for row in rows:
            n, s = totals.get(row["k"], (0, 0))
            totals[row["k"]] = (n + 1, s + row["v"])
        touched = sorted({row["k"] for row in rows})
        expected.append([[k, *totals[k]] for k in touched])
    return expected


def log_excerpt(log: str, limit: int = 60) -> str:
    lines = [l for l in log.splitlines() if any(w in l for w in ("ERROR", "Exception", "Caused by", "Error:"))]
    return "\n".join(lines[:limit])


def run_job(work_dir: Path, provider: str, jar: Path) -> tuple[dict, str]:
    env = dict(os.environ)
    env["TXSTATE_SPARK_JAR"] = str(jar)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    result = work_dir / "result.json"
    log_path = work_dir / "job.log"
    command = [
        sys.executable, str(JOB), "--work-dir", str(work_dir), "--result", str(result),
        "--provider", provider, "--batches", str(BATCHES), "--kill-batch", str(KILL_BATCH),
        "--timeout", "240",
    ]
    with log_path.open("w") as log:
        # Own process group: on a timeout the driver JVM and its executors all go with it.
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True, cwd=str(TESTS_DIR.parent))
        try:
            code = process.wait(timeout=JOB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            pytest.fail(f"the executor-failure job did not finish within {JOB_TIMEOUT_S} s:\n"
                        f"{log_excerpt(log_path.read_text())}")
    text = log_path.read_text()
    assert code == 0 and result.is_file(), f"the job exited with {code}:\n{log_excerpt(text)}"
    return json.loads(result.read_text()), text


def test_aggregation_survives_a_killed_executor_with_exact_counts(
    work_dir, plugin_jar, candidate_provider
):
    report, log = run_job(work_dir, candidate_provider, plugin_jar)
    context = f"\njob log excerpt:\n{log_excerpt(log)}"

    assert not report["errors"], f"{report['errors']}{context}"
    assert report["query_exception"] is None, f"{report['query_exception']}{context}"
    assert report["recorded_provider"] == candidate_provider

    kill = report["kill"]
    assert kill is not None, f"no executor was killed{context}"
    # The kill hit tasks that were running: Spark saw them lost with the executor.
    assert f"ExecutorLostFailure (executor {kill['executor_id']} exited" in log, (
        f"executor {kill['executor_id']} was killed but no running task was lost with it{context}"
    )
    replacements = set(report["executors_after"]) - set(report["executors_before"])
    assert replacements, f"no replacement executor registered: {report['executors_after']}"
    assert kill["executor_id"] not in report["executors_after"]

    expected = expected_updates(report["input_batches"])
    emitted = report["output_batches"]
    assert sorted(map(int, emitted)) == list(range(BATCHES)), sorted(emitted)
    for batch_id, want in enumerate(expected):
        assert emitted[str(batch_id)] == want, (
            f"batch {batch_id} (killed during batch {KILL_BATCH}): expected {want}, "
            f"got {emitted[str(batch_id)]}"
        )
    final: dict[str, list] = {}
    for batch_id in range(BATCHES):
        for k, n, total in emitted[str(batch_id)]:
            final[k] = [n, total]
    all_rows = [row for rows in report["input_batches"] for row in rows]
    assert final == {
        k: [sum(1 for r in all_rows if r["k"] == k), sum(r["v"] for r in all_rows if r["k"] == k)]
        for k in {r["k"] for r in all_rows}
    }
