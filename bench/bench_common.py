"""What the Python benchmarks (streaming_bench.py, memory_bench.py, plots.py) share: the peers,
statistics over repetitions, machine facts, markdown tables and where results go.

The peers are Spark's built-in providers, measured in the same run as txstate, so every ratio in a
report compares numbers taken on the same machine under the same load.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
PLOTS_DIR = REPO_ROOT / "docs" / "bench"
# The tests' helpers (plugin jar lookup, the local-cluster memory job) are reused, not copied.
sys.path.insert(0, str(REPO_ROOT / "tests"))

PROVIDER_CLASS_CONF = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
TXSTATE_CLASS = "txstate.spark.TxStateStoreProvider"
ROCKSDB_CLASS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS_CLASS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


@dataclass(frozen=True)
class Peer:
    """A provider configuration: a short name for files and plots, a label for tables, SQL confs."""

    name: str
    label: str
    confs: dict[str, str] = field(default_factory=dict)

    @property
    def is_txstate(self) -> bool:
        return self.confs.get(PROVIDER_CLASS_CONF) == TXSTATE_CLASS


TXSTATE = Peer("txstate", "txstate", {PROVIDER_CLASS_CONF: TXSTATE_CLASS})
ROCKSDB_CHANGELOG = Peer("rocksdb-changelog", "Spark RocksDB (changelog on)",
                         {PROVIDER_CLASS_CONF: ROCKSDB_CLASS, CHANGELOG_CONF: "true"})
ROCKSDB_NO_CHANGELOG = Peer("rocksdb", "Spark RocksDB (changelog off)",
                            {PROVIDER_CLASS_CONF: ROCKSDB_CLASS, CHANGELOG_CONF: "false"})
HDFS = Peer("hdfs", "Spark HDFS-backed", {PROVIDER_CLASS_CONF: HDFS_CLASS})
STREAMING_PEERS = (TXSTATE, ROCKSDB_CHANGELOG, ROCKSDB_NO_CHANGELOG, HDFS)


# --------------------------------------------------------------------------------------------
# Statistics: each repetition yields one number; reports show the median and the min–max spread.


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float
    n: int

    @staticmethod
    def of(values: Iterable[float]) -> "Spread | None":
        values = [v for v in values if v is not None]
        if not values:
            return None
        return Spread(statistics.median(values), min(values), max(values), len(values))


def fmt_num(x: float | None, unit: str = "") -> str:
    """A number with as many digits as a noisy benchmark deserves."""
    if x is None:
        return "—"
    text = f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"
    return text + unit


def fmt_spread(s: Spread | None, unit: str = "") -> str:
    if s is None:
        return "—"
    if s.n == 1:
        return fmt_num(s.median, unit)
    return f"{fmt_num(s.median, unit)} [{fmt_num(s.low)}–{fmt_num(s.high)}]"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def fmt_ratio(r: float | None) -> str:
    return "—" if r is None else f"{r:.2f}×"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], right_from: int = 1) -> str:
    """A markdown table; columns from `right_from` on are right-aligned (numbers)."""
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Machine facts and result files


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def git_describe() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{rev} (with uncommitted changes)" if dirty else rev
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_facts() -> list[tuple[str, str]]:
    import pyspark

    return [
        ("date", dt.datetime.now().isoformat(timespec="seconds")),
        ("git", git_describe()),
        ("cores", str(os.cpu_count())),
        ("CPU", _cpu_model()),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python", platform.python_version()),
        ("PySpark", pyspark.__version__),
    ]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def timestamp() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def write_results(kind: str, stamp: str, markdown: str, data: dict) -> tuple[Path, Path]:
    """bench/results/<kind>-<stamp>.md (what a person reads) and .json (what plots.py reads)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    md = RESULTS_DIR / f"{kind}-{stamp}.md"
    js = RESULTS_DIR / f"{kind}-{stamp}.json"
    md.write_text(markdown)
    js.write_text(json.dumps(data, indent=1, default=str))
    return md, js


def publish(kind: str, stamp: str, markdown: str, data: dict, problems: Sequence[str]) -> int:
    """Writes and prints a report, then its problems; the exit status says whether there were any."""
    md, js = write_results(kind, stamp, markdown, data)
    print("\n" + markdown)
    print(f"wrote {md} and {js}")
    for problem in problems:
        print(f"ERROR: {problem}", file=sys.stderr)
    return 1 if problems else 0


def load_warning(loads: Sequence[float]) -> str:
    """A sentence for reports whose machine was busy (other engineers' tests share its cores)."""
    cores = os.cpu_count() or 1
    busiest = max(loads) if loads else 0.0
    if busiest <= cores:
        return ""
    return (f"\n**Warning:** the 1-minute load average reached {busiest:.1f} on {cores} cores: other processes "
            "competed for the CPU, so timings are noisy. Compare ratios, not absolute numbers.\n")
