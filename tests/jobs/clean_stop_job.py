"""A stateful query on txstate in local mode, stopped cleanly: tests/test_clean_stop.py.

The query counts words from a folder of JSON files (trigger availableNow, one file per batch) with
no `localDir` set, so each store keeps its RocksDB in a fresh directory of its own; it snapshots
every version and runs maintenance often, so stores have background work when the session stops.
Then the query stops and the session stops, as a user's script ends. The result file holds each
batch's counts, the Spark version, and where the stores kept their RocksDB during the first batch
(the driver's SparkFiles directory, or the JVM's temporary directory, set to one of the job's own);
the test reads the job's log for errors the stop printed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for harness

from harness import streaming_harness  # noqa: E402

TXSTATE = "spark.sql.streaming.stateStore.txstate."
WORDS = ("ant", "bee", "cat", "dog", "eel")


EVENTS_PER_FILE = 2  # of each word: whichever order the source takes the files in, batch i counts 2(i + 1)
PARTITIONS = 4
# A store instance's own RocksDB directory, as the provider names it when no localDir is set.
STORE_DIRECTORY = re.compile(r"op\d+-part(\d+)-default-[0-9a-f-]{36}")


def store_partitions_under(root: Path) -> list[int]:
    """The partitions of the store directories anywhere under `root`."""
    return sorted(int(match.group(1)) for path in root.rglob("*") if path.is_dir()
                  for match in [STORE_DIRECTORY.fullmatch(path.name)] if match)


def write_input(folder: Path, files: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        lines = [json.dumps({"word": word}) for word in WORDS for _ in range(EVENTS_PER_FILE)]
        (folder / f"part-{i:03d}.json").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--work-dir", "--result"):
        parser.add_argument(flag, required=True, type=Path)
    parser.add_argument("--files", type=int, default=3)
    args = parser.parse_args()

    import pyspark
    from pyspark import SparkFiles
    from pyspark.sql import SparkSession

    write_input(args.work_dir / "input", args.files)
    jvm_temp = args.work_dir / "jvm-tmp"
    jvm_temp.mkdir()
    settings = {
        **streaming_harness.spark_settings(streaming_harness.plugin_jar()),
        streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER,
        TXSTATE + "snapshotInterval": "1",
        "spark.sql.streaming.stateStore.maintenanceInterval": "100ms",
        "spark.sql.shuffle.partitions": str(PARTITIONS),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={jvm_temp}",
    }
    builder = SparkSession.builder.master("local[2]").appName("txstate-clean-stop")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    batches: dict[int, list] = {}
    stores: dict[str, list[int]] = {}

    def keep_batch(batch, batch_id: int) -> None:
        batches[batch_id] = sorted((row.word, row["count"]) for row in batch.collect())
        if not stores:  # the batch's stores are open now, in this JVM
            stores["in_spark_files"] = store_partitions_under(Path(SparkFiles.getRootDirectory()))
            stores["in_jvm_temp"] = store_partitions_under(jvm_temp)

    events = spark.readStream.schema("word string").option("maxFilesPerTrigger", 1).json(str(args.work_dir / "input"))
    query = (events.groupBy("word").count().writeStream.outputMode("update")
             .option("checkpointLocation", str(args.work_dir / "checkpoint"))
             .foreachBatch(keep_batch).trigger(availableNow=True).start())
    query.awaitTermination()
    query.stop()
    spark.stop()
    args.result.write_text(json.dumps({"spark": pyspark.__version__, "stores": stores,
                                       "batches": {str(k): v for k, v in sorted(batches.items())}}))
    print("txstate-clean-stop: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
