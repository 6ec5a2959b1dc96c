"""``python -m txstate_spark inspect CHECKPOINT [--json]``: a table on a terminal, JSON for scripts."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, TextIO

from txstate_spark.cli import options
from txstate_spark.errors import TxStateCheckpointError
from txstate_spark.inspection import CheckpointInspection, StoreInspection, inspect
from txstate_spark.jvm_gateway import session_for


def add_inspect(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "inspect",
        help="show what a checkpoint holds: operators, stores, partitions, keys, bytes, load chains, skew",
        description="Show, for every stateful operator and store of a checkpoint, the provider, the "
        "formats, the last committed batch, and per partition its keys, bytes on the checkpoint and the "
        "snapshot and changelogs a load would use; flag skew. Reads only (a read-only file system view); "
        "starts a local Spark session with the txstate jar. Progress goes to stderr.",
    )
    add_common(parser)
    parser.add_argument("--json", action="store_true", help="print the inspection as JSON")


def add_common(parser: argparse.ArgumentParser) -> None:
    """The arguments inspect and verify share."""
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help="the query's checkpointLocation (path or URI)")
    parser.add_argument("--conf", action="append", default=[], type=options.spark_conf, metavar="KEY=VALUE",
                        help="a setting for the local Spark session, e.g. spark.hadoop.fs.s3a.* for the "
                        "checkpoint's file system; repeatable")


def refuse_missing_local_path(checkpoint: str) -> None:
    """A local path that does not exist is refused at once, before a JVM starts (URIs go to Hadoop)."""
    if "://" not in checkpoint and not checkpoint.startswith("file:") and not os.path.exists(checkpoint):
        raise TxStateCheckpointError(
            f"[TXSTATE_OPERATE_NOT_A_CHECKPOINT] {checkpoint} is not a streaming query's checkpoint: it does not "
            "exist. Pass the query's checkpointLocation, the folder that holds offsets/, commits/ and state/.")


def run_inspect(args: argparse.Namespace) -> int:
    refuse_missing_local_path(args.checkpoint)
    with session_for(None, dict(args.conf)) as spark:
        result = inspect(spark, args.checkpoint, progress=ProgressLine(sys.stderr, "inspect"))
    print(json.dumps(result.raw, indent=2) if args.json else render(result))
    return 0


class ProgressLine:
    """One rewritten line on a terminal; one JSON line per change otherwise (for logs)."""

    def __init__(self, out: TextIO, command: str) -> None:
        self.out = out
        self.command = command
        self.tty = out.isatty()

    def __call__(self, progress: Dict[str, Any]) -> None:
        if not progress:
            return
        if not self.tty:
            print(json.dumps({"event": f"txstate-{self.command}-progress", "time": round(time.time(), 3),
                              **progress}), file=self.out, flush=True)
            return
        done, total = progress.get("done", 0), progress.get("total", 0)
        line = (f"\r{self.command}: {done}/{total} store partitions, {progress.get('files', 0)} files  "
                f"{str(progress.get('current', ''))[:70]}")
        self.out.write(line.ljust(120) + ("\n" if total and done == total else ""))
        self.out.flush()


def size(n: Optional[int]) -> str:
    """Bytes in KiB, MiB, GiB: short for a table."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def age(ms: Optional[int], now_ms: int) -> str:
    """How long ago an epoch-millisecond time was."""
    if ms is None:
        return "-"
    seconds = max(0, (now_ms - ms) // 1000)
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds // length}{unit} ago"
    return f"{seconds}s ago"


def render(result: CheckpointInspection) -> str:
    """The inspection as text: a header, then one table per store."""
    now = int(time.time() * 1000)
    last = result.last_committed_batch
    lines = [
        f"checkpoint {result.checkpoint}",
        f"provider {result.provider} ({result.provider_class or 'none recorded: Spark default'}), "
        f"checkpoint format v{result.checkpoint_format}, minBatchesToRetain {result.min_batches_to_retain}",
        "last committed batch " + ("none" if last is None else
                                   f"{last} ({age(result.last_commit_time_ms, now)}); a restart loads "
                                   f"state version {result.state_version}"),
    ]
    lines += [f"note: {n}" for n in result.notes]
    for store in result.stores:
        lines += [""] + _store_lines(store, now)
    return "\n".join(lines)


def _store_lines(store: StoreInspection, now: int) -> List[str]:
    keys = "keys unknown" if store.keys is None else f"{store.keys} keys"
    lines = [f"operator {store.operator_id} ({store.operator_name}), store {store.store_name}: {store.provider}, "
             f"{len(store.partitions)} partitions with files (of {store.num_partitions or '?'}), {keys}"]
    header = ["part", "keys", "snapshots", "shared", "changelogs", "versions", "load chain", "formats", "written by",
              "newest write"]
    rows = [header]
    for p in store.partitions:
        formats = "-" if p.storage_format is None else f"s{p.storage_format}/c{p.changelog_format}"
        versions = "-" if p.oldest_version is None else f"{p.oldest_version}..{p.newest_version}"
        rows.append([str(p.partition), "-" if p.keys is None else str(p.keys), size(p.snapshot_bytes),
                     size(p.shared_file_bytes), size(p.changelog_bytes), versions,
                     "-" if p.chain is None else p.chain.describe, formats, p.written_by or "-",
                     age(p.newest_write_ms, now)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for p in store.partitions:
        lines += [f"  partition {p.partition} unreadable: {u}" for u in p.unreadable]
    if store.skew is not None:
        s = store.skew
        verdict = s.advice if s.flagged else "no skew"
        lines.append(f"  skew by {s.measure}: largest partition {s.largest_partition} holds {s.largest} "
                     f"({s.ratio:.1f}x the median {s.median}): {verdict}")
    lines += [f"  not read: {c}" for c in store.cannot_read]
    return lines
