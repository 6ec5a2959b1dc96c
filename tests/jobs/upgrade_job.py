"""One run of a stateful query on whatever pyspark runs this script (tests/test_spark_upgrade.py).

The test runs it on Spark 3.5, then again from the same checkpoint on Spark 4.0 and 4.3, each time
with that line's txstate jar ($TXSTATE_SPARK_JAR): the upgrade path a user on 3.5 takes.

The query: JSON events (`id`, `word`, some delivered twice) from a folder, `dropDuplicates(["id"])`,
then `groupBy("word").count()` in update mode, with trigger availableNow (every new file is a batch).
Each batch's output goes to `<output>/batch-<id>.json`. The result file says which Spark ran it and,
for each stateful operator of this run's first batch, what its stores did to load: changelogs
replayed and rebuilds from the checkpoint (zero both when a kept local directory was reused).

With `--snapshot-above V` the query snapshots every version and stays up, idle, until every store
has uploaded a snapshot of a version above V (snapshots are uploaded by Spark's maintenance, in
the background of a running query), so the checkpoint holds this line's RocksDB files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for harness

from harness import streaming_harness  # noqa: E402

TXSTATE = "spark.sql.streaming.stateStore.txstate."


def store_dirs(state: Path) -> list[Path]:
    """Every store's folder: state/<operator>/<partition>[/<store name>], those holding changelogs."""
    return sorted({p.parent for p in state.rglob("*.txlog")})


def await_snapshots(query, state: Path, above: int, timeout_s: float = 120) -> dict[str, int]:
    """Waits until the query is idle (every file run) and every store uploaded a snapshot above `above`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        newest = {str(d.relative_to(state)): max((int(m.group(1)) for f in d.iterdir()
                                                    if (m := re.match(r"^(\d+)_.*\.snapshot$", f.name))), default=-1)
                  for d in store_dirs(state)}
        idle = not query.status["isDataAvailable"] and not query.status["isTriggerActive"]
        if idle and newest and min(newest.values()) > above:
            return newest
        if query.exception() is not None:
            raise RuntimeError(f"the query failed: {query.exception()}")
        time.sleep(0.5)
    raise TimeoutError(f"no snapshot above version {above} in every store of {state} in {timeout_s} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--input", "--checkpoint", "--output", "--local-dir", "--result"):
        parser.add_argument(flag, required=True, type=Path)
    parser.add_argument("--snapshot-above", type=int, default=None)
    args = parser.parse_args()

    import pyspark
    from pyspark.sql import SparkSession

    settings = {
        **streaming_harness.spark_settings(streaming_harness.plugin_jar()),
        streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER,
        TXSTATE + "localDir": str(args.local_dir),
        **({TXSTATE + "snapshotInterval": "1"} if args.snapshot_above is not None else {}),
    }
    builder = SparkSession.builder.master("local[2]").appName("txstate-upgrade")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    args.output.mkdir(parents=True, exist_ok=True)

    def write_batch(batch, batch_id: int) -> None:
        rows = sorted((r.word, r["count"]) for r in batch.collect())
        (args.output / f"batch-{batch_id}.json").write_text(json.dumps(rows))

    result: dict = {"spark": pyspark.__version__}
    try:
        events = spark.readStream.schema("id LONG, word STRING").option("maxFilesPerTrigger", 1).json(str(args.input))
        writer = (events.dropDuplicates(["id"]).groupBy("word").count().writeStream.outputMode("update")
                  .foreachBatch(write_batch).option("checkpointLocation", str(args.checkpoint)))
        if args.snapshot_above is None:
            query = writer.trigger(availableNow=True).start()
            query.awaitTermination()
        else:
            query = writer.trigger(processingTime="500 milliseconds").start()
            result["snapshots"] = await_snapshots(query, args.checkpoint / "state", args.snapshot_above)
            query.stop()
        progress = streaming_harness.progress_dicts(query)
        ran = [p for p in progress if p.get("stateOperators")]
        result["batches"] = [p["batchId"] for p in ran]
        result["first_batch_loads"] = [
            {name: op.get("customMetrics", {}).get(name) for name in ("txstateChangelogsReplayed", "txstateRebuilds")}
            for op in (ran[0]["stateOperators"] if ran else [])
        ]
    except Exception as error:  # the test reads the failure from the result file
        result["error"] = f"{type(error).__name__}: {streaming_harness.describe_failure(error)}"
    finally:
        args.result.write_text(json.dumps(result, indent=1))
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
