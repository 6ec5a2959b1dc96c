"""A query that ran on Spark 3.5 with txstate restarts on Spark 4.0 and 4.3 from the same checkpoint.

Each run is its own process on that line's pyspark (the venvs `make test` installs: .venv-3.5_2.12,
.venv-4.0, .venv) with that line's jar (tests/jobs/upgrade_job.py): dropDuplicates then a count, in
update mode, over files of events with re-deliveries.

1. Spark 3.5 runs three files, then stops.
   `migrate` refuses that checkpoint: 3.5 writes no operator metadata (it names what to do).
2. Spark 4.0 restarts from that checkpoint, with the same kept local directory, and runs two more
   files: every store reuses its local database (no rebuild; at most its last changelog replayed), and the counts
   are exact (re-deliveries of 3.5's events are dropped, so the dedup state came along). Now
   `migrate` can plan a move of it.
3. Spark 4.3 restarts from a copy of the 3.5 checkpoint, with no local directory (every store is
   rebuilt from the checkpoint's files), runs the same two files and emits what 4.0 emitted; it
   stays up until every store uploaded a snapshot of its own.
4. Spark 3.5 restarted on the checkpoint 4.3 advanced is refused, naming the release and line
   that wrote it (RocksDB 8 cannot read RocksDB 9's files), and nothing in the checkpoint changes.

Not in `make test-python` (the older lines' venvs install while it runs): `make test-lines` runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = (REPO / "VERSION").read_text().strip()
JOB = REPO / "tests" / "jobs" / "upgrade_job.py"
RUN_TIMEOUT_S = 300
# The lines of the upgrade path: (venv, jar row of project/spark-lines.tsv).
LINES = {"3.5": (".venv-3.5_2.12", "3.5_2.12"), "4.0": (".venv-4.0", "4.0_2.13"), "4.3": (".venv", "4.3_2.13")}
WORDS = ["ant", "bee", "cat", "dog", "eel", "fox"]


def events_of_file(index: int) -> list[dict]:
    """File `index`: ten new events, and three re-deliveries of the file before's (same ids)."""
    fresh = [{"id": index * 10 + i, "word": WORDS[(index * 7 + i * 5) % len(WORDS)]} for i in range(10)]
    again = [{"id": (index - 1) * 10 + i, "word": WORDS[((index - 1) * 7 + i * 5) % len(WORDS)]} for i in (1, 4, 8)]
    return fresh + (again if index > 0 else [])


def write_files(directory: Path, indexes: range) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for index in indexes:
        partial = directory / f".file-{index}.tmp"
        partial.write_text("\n".join(json.dumps(e) for e in events_of_file(index)) + "\n")
        partial.rename(directory / f"file-{index:02d}.json")


def expected_counts(indexes: range) -> dict[str, int]:
    unique = {e["id"]: e["word"] for index in indexes for e in events_of_file(index)}
    return dict(Counter(unique.values()))


def line_process(line: str) -> tuple[Path, dict[str, str]]:
    """That line's venv python, and an environment that runs it with that line's jar."""
    venv, row = LINES[line]
    python = REPO / venv / "bin" / "python"
    if not python.is_file():
        pytest.fail(f"{python} is missing: `make test-lines` (or `make older-venvs`) installs the Spark {line} venv")
    spark_line, scala = row.split("_")
    jar = REPO / "target" / f"txstate-spark-{spark_line}_{scala}-{VERSION}.jar"
    env = {**os.environ, "TXSTATE_SPARK_JAR": str(jar), "PYTHONPATH": str(REPO / "python"),
           "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    env.pop("SPARK_HOME", None)
    return python, env


def run_on(line: str, work: Path, checkpoint: Path, output: Path, local_dir: Path, *extra: str) -> dict:
    python, env = line_process(line)
    result = work / f"result-{line}-{len(list(work.glob('result-*')))}.json"
    done = subprocess.run(
        [str(python), str(JOB), "--input", str(work / "input"), "--checkpoint", str(checkpoint),
         "--output", str(output), "--local-dir", str(local_dir), "--result", str(result), *extra],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert result.is_file(), f"the Spark {line} run wrote no result (exit {done.returncode}):\n{done.stderr[-3000:]}"
    report = json.loads(result.read_text())
    assert report["spark"].startswith(line + "."), report
    return report


def migrate_dry_run(line: str, checkpoint: Path) -> subprocess.CompletedProcess:
    """`python -m txstate_spark migrate CHECKPOINT --to hdfs --dry-run` on that line's pyspark and jar."""
    python, env = line_process(line)
    return subprocess.run([str(python), "-m", "txstate_spark", "migrate", str(checkpoint), "--to", "hdfs", "--dry-run",
                           "--active-window", "0"], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def final_counts(output: Path) -> dict[str, int]:
    """Update mode emits a key's new count in each batch that changes it: the last one is its state."""
    counts: dict[str, int] = {}
    for batch in sorted(output.glob("batch-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        counts.update({word: count for word, count in json.loads(batch.read_text())})
    return counts


def tree_digest(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_checkpoint_of_spark_3_5_restarts_exactly_on_spark_4_0_and_4_3(tmp_path: Path) -> None:
    checkpoint, local_dir = tmp_path / "checkpoint", tmp_path / "local"
    write_files(tmp_path / "input", range(3))
    first = run_on("3.5", tmp_path, checkpoint, tmp_path / "out-3.5", local_dir)
    assert "error" not in first, first["error"]
    assert first["batches"] == [0, 1, 2]
    assert final_counts(tmp_path / "out-3.5") == expected_counts(range(3))
    kept = tmp_path / "checkpoint-3.5"
    shutil.copytree(checkpoint, kept)
    # Spark 3.5 writes no operator metadata: migrate refuses, naming the file and what to do.
    refused = migrate_dry_run("3.5", checkpoint)
    assert refused.returncode == 2 and "no operator metadata" in refused.stderr, refused.stderr[-2000:]
    assert "Run the query for one batch on Spark 4.0 or newer" in refused.stderr, refused.stderr[-2000:]

    write_files(tmp_path / "input", range(3, 5))
    on_40 = run_on("4.0", tmp_path, checkpoint, tmp_path / "out-4.0", local_dir)
    assert "error" not in on_40, on_40["error"]
    assert on_40["batches"] == [3, 4]
    assert final_counts(tmp_path / "out-3.5") | final_counts(tmp_path / "out-4.0") == expected_counts(range(5))
    # Both operators' stores opened the databases 3.5 left in the kept local directory: no load was
    # rebuilt from the checkpoint (a fresh directory is, one per partition). Without a WAL the last
    # commit may not have reached the local disk when 3.5 stopped: a store then catches up by
    # replaying that one changelog (at most one per partition, two per operator).
    loads = on_40["first_batch_loads"]
    assert len(loads) == 2 and all(load["txstateRebuilds"] == 0 for load in loads), on_40
    assert all(load["txstateChangelogsReplayed"] <= 2 for load in loads), on_40
    # Spark 4.0 wrote the operator metadata: now migrate can read the checkpoint (a dry run changes nothing).
    planned = migrate_dry_run("4.0", checkpoint)
    assert planned.returncode == 0, planned.stderr[-2000:]

    moved = tmp_path / "checkpoint-4.3"
    shutil.copytree(kept, moved)
    # Snapshots of 4.3's versions (4 and 5), so the checkpoint holds RocksDB 9's files for step 4.
    on_43 = run_on("4.3", tmp_path, moved, tmp_path / "out-4.3", tmp_path / "local-4.3", "--snapshot-above", "3")
    assert "error" not in on_43, on_43["error"]
    assert on_43["batches"] == [3, 4]
    for batch in (3, 4):
        assert (tmp_path / "out-4.3" / f"batch-{batch}.json").read_text() == \
            (tmp_path / "out-4.0" / f"batch-{batch}.json").read_text()

    # And back: Spark 3.5 on the checkpoint 4.3 moved on (a new file to run, so a batch loads state).
    write_files(tmp_path / "input", range(5, 6))
    before = tree_digest(moved / "state")
    back = run_on("3.5", tmp_path, moved, tmp_path / "out-back", tmp_path / "local-back")
    assert "TXSTATE_CHECKPOINT_FROM_NEWER_SPARK" in back.get("error", ""), back
    assert "(Spark 4.3)" in back["error"] and "not back" in back["error"], back["error"]
    assert tree_digest(moved / "state") == before


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
