"""A user's script that stops its query and its session cleanly prints no error.

In local mode a stopping SparkContext deletes the driver's SparkFiles directory before Spark
closes its state stores. A store kept there (the default without `localDir`) could still be
flushing, and RocksDB printed "While open a file for appending ... No such file or directory" for
files under `userFiles-...` (seen on Spark 3.5). tests/jobs/clean_stop_job.py runs such a script
in its own process, so the stop is the whole JVM's, and this test reads what it printed. Whether a
stop catches a store mid-flush is a matter of timing, so the test also checks the cause: while the
query runs, no store keeps its RocksDB under the driver's SparkFiles directory, and every one keeps
it under the JVM's temporary directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.cluster_tasks import run_job_script
from jobs.clean_stop_job import EVENTS_PER_FILE, PARTITIONS, WORDS

JOB = Path(__file__).resolve().parent / "jobs" / "clean_stop_job.py"
FILES = 3
# What a stop that went wrong prints: RocksDB's errors, Java exceptions, and log lines at ERROR.
STOP_ERRORS = re.compile(r"RocksDBException|No such file or directory|Exception in thread|\bERROR\b")


def test_a_local_session_stopped_after_a_stateful_query_prints_no_error(work_dir, plugin_jar):
    result, log = run_job_script(JOB, ["--work-dir", str(work_dir / "job"), "--files", str(FILES)], work_dir,
                                 plugin_jar, timeout_s=300)
    # The query ran every batch exactly: each file adds EVENTS_PER_FILE events of every word.
    expected = {str(i): [(word, EVENTS_PER_FILE * (i + 1)) for word in WORDS] for i in range(FILES)}
    assert {batch: [tuple(row) for row in rows] for batch, rows in result["batches"].items()} == expected
    assert "txstate-clean-stop: stopped" in log
    assert result["stores"] == {"in_spark_files": [], "in_jvm_temp": list(range(PARTITIONS))}, (
        "a local session's stores must live outside the SparkFiles directory a stopping context deletes")
    errors = [line for line in log.splitlines() if STOP_ERRORS.search(line)]
    assert not errors, f"stopping the session printed errors on Spark {result['spark']}:\n" + "\n".join(errors[:20])
