"""The short soak CI runs: one fault of every kind with a fixed seed, zero violations.

tests/soak/soak.py (docs/reliability.md, "Soak") runs an aggregation, a dropDuplicates and a
stream-stream join on `local-cluster[2,1,1024]` and checks every batch's output, the final state
and every interactive-query answer against its model. The eight faults asked for (KINDS, in an
order the seed picks) are SIGKILLs of an executor mid-put, mid-early-commit, mid-commit, in a
snapshot upload and in a cleanup round (the maintenance phases), a SIGKILL of the driver in a
batch, and two clean restarts, one keeping and one wiping the local directories: this test asserts
that each of them really happened (the kill found its phase, the driver was started again, the
stores rebuilt after the wipe) and that nothing was lost, duplicated or torn. `make soak` runs the
long version.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
SOAK = TESTS_DIR / "soak" / "soak.py"
SEED = 7
KINDS = ("executor:put,executor:early-commit,executor:commit,executor:snapshot,executor:cleanup,"
         "driver,restart-keep,restart-wipe")
KILLS = len(KINDS.split(","))
TIMEOUT_S = 900


def test_a_fault_of_every_kind_leaves_every_batch_and_the_state_exactly_as_the_model_says(work_dir, plugin_jar):
    result = work_dir / "soak.json"
    command = [sys.executable, str(SOAK), "--kills", str(KILLS), "--seed", str(SEED), "--kinds", KINDS,
               "--work-dir", str(work_dir / "soak"), "--report-dir", str(work_dir / "reports"),
               "--result", str(result)]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=str(TESTS_DIR.parent))
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"the soak did not finish within {TIMEOUT_S} s:\n{error.stdout}")
    assert result.is_file(), f"the soak wrote no report (exit {run.returncode}):\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    report = json.loads(result.read_text())
    print(run.stdout)

    assert report["violations"] == [], "\n".join(report["violations"][:20])
    assert run.returncode == 0, run.stdout[-3000:]
    # Every kind of fault asked for was injected (none missed its phase), and the runs went on.
    faults = report["faults"]
    assert sorted(faults) == sorted(KINDS.split(",")), faults
    assert all(entry["injected"] == 1 and entry["missed"] == 0 for entry in faults.values()), faults
    # The first, then one after the driver's kill and one after each clean restart.
    assert report["driver_starts"] == 4, report["driver_starts"]
    for fault in report["fault_log"]:
        assert fault["recovery_s"] is not None, fault
        if fault["kind"].startswith("executor:"):
            assert fault["died"], f"the executor JVM survived SIGKILL: {fault}"
    # After the wipe every store of the three queries was rebuilt from the checkpoint.
    assert report["recoveries"]["restart-wipe"]["rebuilds"] > 0, report["recoveries"]
    # Interactive queries ran throughout and their answers were checked.
    assert report["interactive_queries"]["checked_values"] > 0, report["interactive_queries"]
    assert len(list((work_dir / "reports").glob("soak-*.md"))) == 1
