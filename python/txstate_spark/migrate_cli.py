"""The command line's migration: a local Spark session with the jar, progress on stderr."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Dict, TextIO

from txstate_spark.migration import MigrationReport, migrate
from txstate_spark.session import configure

# Quiet, local and self-contained: the session exists only to host the providers.
_SESSION_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


def run_in_local_session(args: argparse.Namespace) -> MigrationReport:
    """Start a local session with the txstate jar, migrate, stop the session."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("txstate-migrate")
    for key, value in {**_SESSION_SETTINGS, **dict(args.conf)}.items():
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
