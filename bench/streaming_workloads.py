"""The streaming benchmark's queries: one per kind of state Spark keeps, each paired with a cheap
summary of its output so that providers can be checked against each other.

  aggregation     groupBy(k).agg(count, sum(v)), update mode: one state row per key seen so far.
  dropDuplicates  dropDuplicates(k), append mode, no watermark: one state row per key seen so far.
  join            left ⋈ right on k, inner, no watermark: every input row of both sides stays in state.

The summaries are added up over the micro-batches. They do not depend on which provider kept the
state, so any difference between providers is a wrong result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Workload:
    name: str
    output_mode: str
    build: Callable  # (spark, input dirs) -> streaming DataFrame
    summarize: Callable  # batch output DataFrame -> list of aggregate columns (summed over batches)


def _files(spark, directory: Path, schema: str):
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(directory))


def _aggregation(spark, dirs: dict[str, Path]):
    from pyspark.sql import functions as F

    return _files(spark, dirs["events"], "k long, v long").groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))


def _dedup(spark, dirs: dict[str, Path]):
    return _files(spark, dirs["events"], "k long, v long").dropDuplicates(["k"])


def _join(spark, dirs: dict[str, Path]):
    left = _files(spark, dirs["left"], "k long, lv long")
    right = _files(spark, dirs["right"], "k long, rv long")
    return left.join(right, "k", "inner")


def _rows_and_sums(*columns: str) -> Callable:
    def summarize(df):
        from pyspark.sql import functions as F

        return [F.count(F.lit(1)).alias("rows")] + [F.sum(c).alias(f"sum_{c}") for c in columns]

    return summarize


WORKLOADS = (
    # update mode: the rows a batch outputs are the keys it touched, with their running count and sum
    Workload("aggregation", "update", _aggregation, _rows_and_sums("n", "total")),
    # which duplicate survives within a batch is Spark's choice, so only the keys are summed
    Workload("dropDuplicates", "append", _dedup, _rows_and_sums("k")),
    Workload("join", "append", _join, _rows_and_sums("lv", "rv")),
)
