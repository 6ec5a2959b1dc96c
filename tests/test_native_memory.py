"""One native memory budget per executor, on a real executor JVM (`local-cluster`).

512 store instances of one streaming aggregation live on one executor. Each reports the executor's
budget (`txstateExecutorNativeMemoryLimitBytes`) and its use read from the shared RocksDB cache
(`txstateExecutorNativeMemoryBytes`), and its own even share of that use (`txstateNativeMemoryBytes`):
summed over the stores, the shares are the executor's use, which must stay under the limit. With a
cache and memtables per instance again, 512 stores hold 1 MiB of memtable each and the sum goes far
over it (516 MiB when each store is sized on its own). Runs in 85-100 s on two busy cores
(jobs/native_memory_job.py).
"""

from __future__ import annotations

from pathlib import Path

from harness.cluster_tasks import run_job_script

TESTS_DIR = Path(__file__).resolve().parent
JOB = TESTS_DIR / "jobs" / "native_memory_job.py"
MIB = 1 << 20
LIMIT_MB = 64
PARTITIONS = 512


def test_512_stores_on_one_executor_stay_under_its_native_memory_budget(plugin_jar: Path, work_dir: Path):
    report, log = run_job_script(JOB, ["--work-dir", str(work_dir), "--max-native-mb", str(LIMIT_MB),
                                       "--partitions", str(PARTITIONS)], work_dir, plugin_jar, timeout_s=300)
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
