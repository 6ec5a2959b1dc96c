"""One native memory budget per executor, on a real executor JVM (`local-cluster`).

512 store instances of one streaming aggregation live on one executor. Each reports the executor's
budget (`txstateExecutorNativeMemoryLimitBytes`) and its use read from the shared RocksDB cache
(`txstateExecutorNativeMemoryBytes`), and its own even share of that use (`txstateNativeMemoryBytes`):
summed over the stores, the shares are the executor's use, which must stay under the limit. With a
cache and memtables per instance again, 512 stores hold 1 MiB of memtable each and the sum goes far
over it (516 MiB when each store is sized on its own). Once the application stops, its executor exits
with those stores open, and their local directories must go with it. Runs in 85-100 s on two busy
cores (jobs/native_memory_job.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster_tasks import run_job_script, store_entries, wait_for

TESTS_DIR = Path(__file__).resolve().parent
JOB = TESTS_DIR / "jobs" / "native_memory_job.py"
MIB = 1 << 20
LIMIT_MB = 64
PARTITIONS = 512


@pytest.fixture(scope="module")
def report(plugin_jar: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One run of the job, shared by this module's tests (it takes most of two minutes)."""
    work_dir = tmp_path_factory.mktemp("native-memory")
    report, _ = run_job_script(JOB, ["--work-dir", str(work_dir), "--max-native-mb", str(LIMIT_MB),
                                     "--partitions", str(PARTITIONS)], work_dir, plugin_jar, timeout_s=300)
    return report


def test_512_stores_on_one_executor_stay_under_its_native_memory_budget(report: dict):
    assert report["error"] is None, report["error"]
    batches = [p for p in report["progress"] if p.get("stateOperators")]
    assert len(batches) == 2, [p["batchId"] for p in report["progress"]]
    for progress in batches:
        op = progress["stateOperators"][0]
        custom = op["customMetrics"]
        stores = op["numStateStoreInstances"]
        assert stores == PARTITIONS
        shares = custom["txstateNativeMemoryBytes"]
        assert shares <= LIMIT_MB * MIB, f"the stores' native memory sums to {shares / MIB:.1f} MiB, over {LIMIT_MB} MiB"
        # Every store reports the executor's budget and use (progress sums over stores).
        assert custom["txstateExecutorNativeMemoryLimitBytes"] == stores * LIMIT_MB * MIB, custom
        executor_use = custom["txstateExecutorNativeMemoryBytes"] / stores
        assert 0 < executor_use <= LIMIT_MB * MIB, custom


def test_an_executor_that_exits_with_its_stores_open_leaves_no_local_directories(report: dict):
    """A standalone executor exits with its stores still open when the application ends (Spark never
    closes their providers); their fresh local directories go with it, not into the worker's work
    directory for good (docs/ARCHITECTURE.md, "Local disk")."""
    assert report["store_dirs_while_running"] >= PARTITIONS, report["store_dirs_while_running"]
    app_dir = Path(report["app_dir"])
    gone = wait_for(lambda: not store_entries(app_dir), timeout_s=30)
    assert gone, f"{len(store_entries(app_dir))} store directories left in {app_dir}"
