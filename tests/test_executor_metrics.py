"""txstate's executor metrics in Spark's metrics system, on a real executor JVM.

jobs/executor_metrics_job.py runs a word count on `local-cluster[1,1,1024]` with a session from
configure() (which enables `txstate.spark.TxStatePlugin`) and Spark's CSV sink. The executor's sink
must write a file for every metric the plugin registers (the names: jvm/src/main/scala/txstate/spark/
ExecutorMetrics.scala), and the values must be what the stores report in the query's progress:
the open store instances, the early commits and undo dropped summed over every batch, and the
budgets' limits that configure() set.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster_tasks import run_job_script
from harness.executor_metric_names import registered_metrics
from harness.streaming_harness import plugin_jar

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "tests" / "jobs" / "executor_metrics_job.py"
MIB = 1024 * 1024
# The CSV sink's column of each kind of metric.
CSV_COLUMN = {"gauge": "value", "counter": "count"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("executor-metrics")
    result, _ = run_job_script(JOB, ["--work-dir", str(work)], work, plugin_jar(), timeout_s=300)
    return result


def metric(report: dict, name: str) -> int:
    column = CSV_COLUMN[registered_metrics()[name]]
    row = report["metrics"].get(name)
    assert row is not None, (f"the executor's CSV sink wrote no file for {name}; plugin files: "
                             f"{sorted(report['metrics'])}; all files: {report['files'][:20]}")
    return int(float(row[column]))


def test_configure_enables_the_plugin_and_the_executor_reports_every_metric_it_registers(report: dict) -> None:
    assert report["plugins"] == "txstate.spark.TxStatePlugin"
    assert report["reported_twice_more"], f"the executor's sink did not report twice after the last batch: {report['files'][:20]}"
    assert sorted(report["metrics"]) == sorted(registered_metrics())


def test_the_executor_gauges_match_what_the_stores_report(report: dict) -> None:
    progress = [p for p in report["progress"] if p["stateOperators"]]
    operators = [p["stateOperators"][0] for p in progress]
    newest = operators[-1]
    assert metric(report, "openStoreInstances") == newest["numStateStoreInstances"] == 2
    early = sum(op["customMetrics"]["txstateEarlyCommits"] for op in operators)
    assert early > 0, "the job's batches must commit early (maxUncommittedRecords=8)"
    assert metric(report, "earlyCommits") == early
    assert metric(report, "undoDropped") == sum(op["customMetrics"]["txstateUndoDropped"] for op in operators)
    # Every store reports the executor's limits; the progress sums them over its stores.
    assert metric(report, "nativeMemoryLimitBytes") == 64 * MIB == \
        newest["customMetrics"]["txstateExecutorNativeMemoryLimitBytes"] // newest["numStateStoreInstances"]
    assert metric(report, "heapLimitBytes") == 32 * MIB == \
        newest["customMetrics"]["txstateExecutorHeapLimitBytes"] // newest["numStateStoreInstances"]
    assert 0 < metric(report, "nativeMemoryUsedBytes") <= 64 * MIB
    assert 0 <= metric(report, "heapUsedBytes") <= 32 * MIB
    assert metric(report, "backgroundWriteBacklog") == 0, "no batch runs: no background write waits"
    assert 0 < metric(report, "maxSnapshotLagVersions") <= newest["customMetrics"]["txstateSnapshotLagVersions"]
