"""One provider, one workload, in a Spark application of its own: what a user's first streaming job
meets (bench/fresh_app_bench.py starts one process per run). The JVM starts cold, the provider's
classes load in the first batch, and nothing from another provider's run is left in the heap.

  .venv/bin/python bench/fresh_app_job.py --peer txstate --workload aggregation --input DIR \
      --checkpoint DIR --result FILE [--java-options "-XX:StartFlightRecording=filename=run.jfr"]

The result file holds every batch's metrics (streaming_bench.batch_metrics), the run's output
summary (checked against the other providers') and the wall time from session start to the end.
`--java-options` go to the driver JVM (in local mode, the executor too): a profiler's agent or Java
Flight Recorder, for profiles of where a batch's time goes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import STREAMING_PEERS  # noqa: E402
from streaming_bench import batch_metrics, build_session, run_to_end, select_peer  # noqa: E402
from streaming_workloads import WORKLOADS  # noqa: E402

SHUFFLE_PARTITIONS = 4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", required=True, choices=[p.name for p in STREAMING_PEERS])
    parser.add_argument("--workload", required=True, choices=[w.name for w in WORKLOADS])
    for flag in ("--input", "--checkpoint", "--result"):
        parser.add_argument(flag, required=True, type=Path)
    parser.add_argument("--java-options", help="options for the driver JVM, e.g. a profiler's agent")
    args = parser.parse_args()
    peer = next(p for p in STREAMING_PEERS if p.name == args.peer)
    workload = next(w for w in WORKLOADS if w.name == args.workload)
    dirs = {name: args.input / name for name in ("events", "left", "right")}

    started = time.monotonic()
    spark = build_session(SHUFFLE_PARTITIONS, "txstate-fresh-app-bench", args.java_options)
    session_s = time.monotonic() - started
    select_peer(spark, peer)
    query, sums, error = run_to_end(spark, workload, dirs, args.checkpoint)
    batches = [batch_metrics(p) for p in (json.loads(p.json) for p in query.recentProgress) if p["numInputRows"] > 0]
    result = {"peer": peer.name, "workload": workload.name, "error": error, "session_s": round(session_s, 2),
              "seconds": round(time.monotonic() - started, 2), "batches": batches,
              "state_rows": batches[-1]["state_rows"] if batches else None, "summary": dict(sorted(sums.items()))}
    spark.stop()
    args.result.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
