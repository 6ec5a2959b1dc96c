"""PNG plots of the latest benchmark results, for docs/bench/.

  .venv/bin/python bench/plots.py        (make bench-plots; needs bench/requirements.txt)

Reads bench/results/: the newest full-mode report of each kind (else the newest quick one) —
streaming-*.json, memory-*.json, scaling-*.json, and store-*.md, the Scala store bench's markdown report (its
"Results" and "Details" tables are parsed; the report is the one format that bench writes). Bars are
medians over repetitions; whiskers span the repetitions' min–max.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from typing import Any
from pathlib import Path

from bench_common import PLOTS_DIR, RESULTS_DIR

TXSTATE_COLORS = ("#1b7837", "#7fbf7b")  # txstate stands out in greens; peers in colors far from them
PEER_COLORS = ("#2166ac", "#f1a340", "#8073ac", "#999999", "#b35806", "#67a9cf")


def newest(pattern: str, is_full) -> Path | None:
    """The newest result file matching `pattern` whose content is a full-mode run, else the newest."""
    files = sorted(RESULTS_DIR.glob(pattern))
    full = [f for f in files if is_full(f)]
    return (full or files or [None])[-1]


def bars(ax, labels: list[str], spreads: list[dict | None], title: str, unit: str) -> None:
    """One bar per label: median height, min–max whisker."""
    medians = [s["median"] if s else 0 for s in spreads]
    low = [s["median"] - s["low"] if s else 0 for s in spreads]
    high = [s["high"] - s["median"] if s else 0 for s in spreads]
    peer_colors, tx_colors = iter(PEER_COLORS * 2), iter(TXSTATE_COLORS * 4)
    colors = [next(tx_colors) if l.split(",")[0] == "txstate" else next(peer_colors) for l in labels]
    ax.bar(range(len(labels)), medians, yerr=[low, high], capsize=4, color=colors)
    ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(unit)
    for i, m in enumerate(medians):
        if m:
            ax.annotate(f"{m:,.0f}", (i, m), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                        textcoords="offset points")


def footer(fig, data: dict, source: Path) -> None:
    facts = data.get("facts", {})
    fig.text(0.01, 0.005, f"{source.name}; load average {facts.get('load average at start / end', '?')} on "
             f"{facts.get('cores', '?')} cores (shared machine: compare ratios); R={data.get('repetitions')}",
             fontsize=7, color="gray")


def plot_streaming(path: Path, out: Path) -> None:
    import matplotlib.pyplot as plt

    data = json.loads(path.read_text())
    peers = data["peers"]
    workloads = list(data["stats"])
    fig, axes = plt.subplots(2, len(workloads), figsize=(4 * len(workloads), 7), squeeze=False)
    for col, workload in enumerate(workloads):
        stats = data["stats"][workload]
        labels = [p["label"] for p in peers]
        bars(axes[0][col], labels, [stats[p["name"]]["trigger_ms"] for p in peers],
             f"{workload}: batch duration (median)", "ms")
        bars(axes[1][col], labels, [stats[p["name"]]["state_ms"] for p in peers],
             f"{workload}: state op time (median)", "ms, summed over partitions")
    fig.suptitle(f"Streaming benchmark ({data['mode']}, {data['stamp']}): lower is better", fontsize=11)
    footer(fig, data, path)
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_memory(path: Path, out: Path) -> None:
    import matplotlib.pyplot as plt

    data = json.loads(path.read_text())
    configs = data["configs"]
    labels = [c["label"] for c in configs]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.8))
    for ax, (metric, title, unit) in zip(axes, (
            ("peak_rss_mib", "peak executor RSS (VmHWM)", "MiB"), ("peak_heap_mib", "peak executor JVM heap", "MiB"),
            ("query_s", "batch duration", "s"))):
        bars(ax, labels, [data["stats"][c["name"]][metric] for c in configs], title, unit)
    fig.suptitle(f"Memory benchmark: one batch of {data['keys']:,} new keys, local-cluster[2,1,1024] "
                 f"({data['mode']}, {data['stamp']}); lower is better", fontsize=11)
    footer(fig, data, path)
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def parse_markdown_table(text: str, heading: str) -> list[dict[str, str]]:
    """The first table after `## <heading>` as a list of {column: cell}."""
    lines: list[str] = []
    for line in text.split(f"## {heading}", 1)[1].splitlines():
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            break  # the end of the first table
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


def cell_spread(cell: str) -> dict | None:
    """'32,983 [30,000–35,000]' -> {median, low, high}; a bare number has no spread."""
    numbers = [float(n.replace(",", "")) for n in re.findall(r"[\d,]*\.?\d+", cell)]
    if not numbers:
        return None
    low, high = (numbers[1], numbers[2]) if len(numbers) >= 3 else (numbers[0], numbers[0])
    return {"median": numbers[0], "low": low, "high": high}


def plot_store(path: Path, out: Path) -> None:
    import matplotlib.pyplot as plt

    text = path.read_text()
    results = parse_markdown_table(text, "Results (medians)")
    details = {r["provider"]: r for r in parse_markdown_table(text, "Details (medians)")}
    labels = [r["provider"].replace("raw rocksdbjni", "raw") for r in results]
    fig, axes = plt.subplots(1, 3, figsize=(14, 5))
    bars(axes[0], labels, [cell_spread(r["updates/s"]) for r in results], "updates/s (higher is better)", "updates/s")
    bars(axes[1], labels, [cell_spread(details.get(r["provider"], {}).get("updates/CPU-s", "")) for r in results],
         "updates per CPU-second (higher is better)", "updates/CPU-s")
    bars(axes[2], labels, [cell_spread(r["commit p50 ms"]) for r in results], "commit p50 (lower is better)", "ms")
    workload = re.search(r"\| workload \| (.*) \|", text)
    load = re.search(r"\| load average at start \| (.*) \|", text)
    fig.suptitle(textwrap.fill(f"Store-level benchmark ({path.stem}): {workload.group(1) if workload else ''}", 150),
                 fontsize=10)
    fig.text(0.01, 0.005, f"{path.name}; load average at start {load.group(1) if load else '?'} (shared machine)",
             fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def merged_scaling_runs(paths: list[Path]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The cells of several scaling runs, a later run's cell replacing an earlier one's (same provider,
    distribution and size); the runs must share batches, updates and heap, or their points would not compare."""
    runs = [json.loads(p.read_text()) for p in paths]
    shape = {(r["batches"], r["updates"], r["heap"]) for r in runs}
    if len(shape) > 1:
        raise SystemExit(f"scaling runs {', '.join(p.name for p in paths)} differ in batches/updates/heap: {shape}")
    cells: dict[tuple[str, str, int], dict[str, Any]] = {}
    for run in runs:
        for c in run["cells"]:
            cells[(c["peer"], c["distribution"], c["keys"])] = c
    return runs[-1], list(cells.values())


def plot_scaling(paths: list[Path], out: Path) -> None:
    """Updates/s, commit p50 and peak RSS against state size: a line per provider and key distribution."""
    import matplotlib.pyplot as plt

    data, cells = merged_scaling_runs(paths)
    loads = [load for p in paths for load in json.loads(p.read_text())["loads"] or [0]]
    peers = list(dict.fromkeys(c["peer"] for c in cells))
    others = iter(PEER_COLORS)
    colors = {p: {"txstate": TXSTATE_COLORS[0], "txstate-cache": TXSTATE_COLORS[1]}.get(p) or next(others) for p in peers}
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    panels = (("updates_per_s", "updates/s (higher is better)", "updates/s"),
              ("commit_p50_ms", "commit p50 (lower is better)", "ms"),
              ("peak_rss_mib", "peak RSS of the JVM (lower is better)", "MiB"))
    for ax, (metric, title, unit) in zip(axes, panels):
        for peer in peers:
            for dist, style in (("uniform", "-"), ("zipf", "--")):
                run = sorted((c for c in cells if c["peer"] == peer and c["distribution"] == dist), key=lambda c: c["keys"])
                ok = [c for c in run if c["outcome"] == "ok" and isinstance(c.get(metric), (int, float))]
                if ok:
                    ax.plot([c["keys"] for c in ok], [c[metric] for c in ok], style, marker="o", color=colors[peer],
                            label=f"{peer}, {dist}")
                for c in run:
                    if c["outcome"].startswith("out of heap") and ok:
                        ax.plot([c["keys"]], [ok[-1][metric]], marker="x", markersize=12, color=colors[peer])
                        ax.annotate(c["outcome"], (c["keys"], ok[-1][metric]), fontsize=7, color=colors[peer],
                                    xytext=(4, 4), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("keys in state")
        ax.set_ylabel(unit)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Scaling curve: {data['batches']} batches x {data['updates']:,} get+put, "
                 f"every JVM -Xmx{data['heap']}; x: the run ran out of heap", fontsize=10)
    fig.text(0.01, 0.005, f"{', '.join(p.name for p in paths)}; load average up to {max(loads):.1f}",
             fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PLOTS_DIR)
    for kind in ("streaming", "memory", "store"):
        parser.add_argument(f"--{kind}", type=Path, help=f"plot this {kind} result instead of the newest")
    parser.add_argument("--scaling", type=Path, nargs="+",
                        help="plot these scaling runs (merged, later ones win) instead of the newest full one")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    args.out.mkdir(parents=True, exist_ok=True)
    json_full = lambda f: json.loads(f.read_text()).get("mode") == "full"  # noqa: E731
    # A store report made with --only may lack txstate or its peers: those are skipped.
    store_full = lambda f: (", full (" in f.read_text().splitlines()[0] and "| txstate |" in f.read_text()  # noqa: E731
                            and "| Spark RocksDB (changelog on) |" in f.read_text())
    sources = (
        ("streaming", args.streaming or newest("streaming-*.json", json_full), plot_streaming),
        ("memory", args.memory or newest("memory-*.json", json_full), plot_memory),
        ("store", args.store or newest("store-*.md", store_full), plot_store),
        ("scaling", args.scaling or newest("scaling-*.json", lambda f: len(json.loads(f.read_text())["cells"]) >= 24),
         lambda source, target: plot_scaling(source if isinstance(source, list) else [source], target)),
    )
    for kind, source, plot in sources:
        if source is None:
            print(f"no {kind} results in {RESULTS_DIR}: run the benchmark first", file=sys.stderr)
            continue
        target = args.out / f"{kind}.png"
        plot(source, target)
        print(f"{target} <- {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
