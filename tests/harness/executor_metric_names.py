"""The executor metrics txstate.spark.TxStatePlugin registers, read from their one list in the jar's
source (jvm/src/main/scala/txstate/spark/ExecutorMetrics.scala), for the tests that check a sink's
files, the docs and the sample Grafana dashboard against it. No JVM."""

from __future__ import annotations

import re
from pathlib import Path

METRICS_SOURCE = Path(__file__).resolve().parents[2] / "jvm/src/main/scala/txstate/spark/ExecutorMetrics.scala"
# What Spark puts between its namespace and executor id and a plugin metric's name.
SOURCE_NAME = "plugin.txstate.spark.TxStatePlugin"


def registered_metrics() -> dict[str, str]:
    """Each metric's name and its Dropwizard kind: "gauge" (a level) or "counter" (a count)."""
    found = re.findall(r'ExecutorMetric\("(\w+)", (Level|Count),', METRICS_SOURCE.read_text())
    assert found, f"no ExecutorMetric rows in {METRICS_SOURCE}"
    return {name: "gauge" if kind == "Level" else "counter" for name, kind in found}
