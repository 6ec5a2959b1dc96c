"""``python -m txstate_spark migrate``: a local Spark session with the jar, progress on stderr."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any, Dict, TextIO

from txstate_spark.cli import options
from txstate_spark.jvm_gateway import LOCAL_SESSION_SETTINGS
from txstate_spark.migration import DEFAULT_ACTIVE_WINDOW_SECONDS, DESTINATIONS, MigrationReport, migrate
from txstate_spark.session import configure


def add_migrate(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "migrate",
        help="move a stopped query's state to another state store provider (or undo that)",
        description="Move the state of a stopped streaming query to another state store provider, so "
        "the query, restarted unchanged, goes on with exactly the state it had. Starts a local Spark "
        "session with the txstate jar. The checkpoint's metadata is saved to "
        "CHECKPOINT/_txstate_migration/<time>/ first; the switch is the last step.",
    )
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help="the query's checkpointLocation (path or URI)")
    parser.add_argument("--to", choices=DESTINATIONS, help="the destination provider")
    parser.add_argument("--partitions", type=int, metavar="N",
                        help="rescale the state to N partitions (the query's shuffle partitions from then on)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and row counts, change nothing")
    parser.add_argument("--undo", action="store_true", help="restore the provider the newest migration replaced")
    parser.add_argument("--active-window", type=int, default=DEFAULT_ACTIVE_WINDOW_SECONDS, metavar="SECONDS",
                        help="refuse if the query wrote its logs less than this long ago (0: skip the check; "
                        f"default {DEFAULT_ACTIVE_WINDOW_SECONDS})")
    parser.add_argument("--rollback-uncommitted", action="store_true",
                        help="if the query stopped mid-batch, migrate the last commit's state; the query "
                        "re-runs the unfinished batch on the destination")
    parser.add_argument("--conf", action="append", default=[], type=options.spark_conf, metavar="KEY=VALUE",
                        help="a setting for the migration's local Spark session, e.g. spark.driver.memory=8g "
                        "(a heap provider's state is read into memory), spark.hadoop.fs.s3a.* for the checkpoint's "
                        "file system, or spark.sql.streaming.stateStore.txstate.* (checked at once); repeatable")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run_migrate(args: argparse.Namespace) -> int:
    if not args.undo and args.to is None:
        print("txstate-spark: error: migrate needs --to (txstate, rocksdb or hdfs) or --undo", file=sys.stderr)
        return 2
    report = run_in_local_session(args)
    print(json.dumps(dataclasses.asdict(report)) if args.json else report.summary())
    return 0


def run_in_local_session(args: argparse.Namespace) -> MigrationReport:
    """Start a local session with the txstate jar, migrate, stop the session."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("txstate-migrate")
    # Quiet, local and self-contained, as for inspect and verify: the session only hosts the providers.
    for key, value in {**LOCAL_SESSION_SETTINGS, **dict(args.conf)}.items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return migrate(spark, args.checkpoint, to=args.to, partitions=args.partitions, dry_run=args.dry_run,
                       undo=args.undo, active_window_seconds=args.active_window,
                       rollback_uncommitted=args.rollback_uncommitted, progress=ProgressPrinter(sys.stderr))
    finally:
        spark.stop()


class ProgressPrinter:
    """A one-line progress bar on a terminal; one JSON line per change otherwise (for logs)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()

    def __call__(self, progress: Dict[str, Any]) -> None:
        if not progress:
            return
        if not self.tty:
            print(json.dumps({"event": "txstate-migrate-progress", "time": round(time.time(), 3), **progress}),
                  file=self.out, flush=True)
            return
        done, total = progress.get("done", 0), progress.get("total", 0)
        width = 30
        filled = int(width * done / total) if total else 0
        eta = progress.get("etaSeconds", -1)
        line = (f"\r{progress.get('phase', '')}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total} partitions, "
                f"{progress.get('rows', 0)} rows, {progress.get('rowsPerSecond', 0)} rows/s"
                f"{f', ETA {eta}s' if eta >= 0 else ''}  {progress.get('current', '')[:60]}")
        self.out.write(line.ljust(150))
        if progress.get("phase") == "done":
            self.out.write("\n")
        self.out.flush()
