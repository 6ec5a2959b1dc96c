"""A word count on txstate whose jar comes from Maven coordinates, as a user's job gets it.

Run by test_maven_packages.py in a process of its own: under `spark-submit --packages <coordinates>
--repositories <repo>` (`--how submit`), or as a plain Python script whose session names the
coordinates in `spark.jars.packages` and `spark.jars.repositories` (`--how session`). Either way no
`spark.jars` names the jar: Ivy resolves it from the repository into `spark.jars.ivy`. The job runs
the count on each input file named (one `availableNow` run per file, each a restart from the same
checkpoint) and reports every run's counts, its state operators' progress and what Spark was given
as jars. It asserts nothing; the test compares the counts with a count of the words.

Usage: maven_package_job.py --how submit|session --checkpoint DIR --inputs DIR --files A,B --result FILE
       [--coordinates G:A:V --repository URL --ivy DIR]   (session only)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

PROVIDER = "txstate.spark.TxStateStoreProvider"
PLUGIN = "txstate.spark.TxStatePlugin"


def session(args: argparse.Namespace):
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[2]").appName("txstate-maven-package")
               .config("spark.sql.streaming.stateStore.providerClass", PROVIDER)
               .config("spark.plugins", PLUGIN)
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1"))
    if args.how == "session":
        builder = (builder.config("spark.jars.packages", args.coordinates)
                   .config("spark.jars.repositories", args.repository)
                   .config("spark.jars.ivy", args.ivy))
    return builder.getOrCreate()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--how", choices=("submit", "session"), required=True)
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--inputs", required=True, type=Path)
    parser.add_argument("--files", required=True, help="comma-separated input files, one run each")
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--coordinates")
    parser.add_argument("--repository")
    parser.add_argument("--ivy")
    args = parser.parse_args()

    spark = session(args)
    spark.sparkContext.setLogLevel("WARN")
    runs = []
    try:
        source = args.inputs / "source"
        source.mkdir(parents=True, exist_ok=True)
        for name in args.files.split(","):
            shutil.copy(args.inputs / name, source / name)
            counts = spark.readStream.text(str(source)).groupBy("value").count()
            seen: dict[str, int] = {}

            def collect(batch, _batch_id: int) -> None:
                seen.update({row["value"]: row["count"] for row in batch.collect()})

            query = (counts.writeStream.outputMode("update").foreachBatch(collect).trigger(availableNow=True)
                     .option("checkpointLocation", str(args.checkpoint)).start())
            query.awaitTermination()
            # pyspark 3.5 reports progress as dicts, 4.x as objects with their JSON.
            progress = [json.loads(p.json) if hasattr(p, "json") else p for p in query.recentProgress]
            runs.append({"file": name, "counts": seen,
                         "operators": [op for p in progress for op in p["stateOperators"]]})
        conf = spark.sparkContext.getConf()
        report = {"runs": runs, "spark_jars": conf.get("spark.jars", ""),
                  "provider": spark.conf.get("spark.sql.streaming.stateStore.providerClass"),
                  "plugins": conf.get("spark.plugins", "")}
        args.result.write_text(json.dumps(report, indent=1))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
