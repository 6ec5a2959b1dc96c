"""The sample Grafana dashboard (conf/grafana-txstate-executors.json) and the JMX exporter rules it
relies on (conf/jmx-exporter-txstate.yaml) plot only metrics txstate.spark.TxStatePlugin registers:
the names come from their one list (tests/harness/executor_metric_names.py reads it from the jar's
source), so a renamed or dropped metric fails here. No JVM."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

from harness.executor_metric_names import SOURCE_NAME, registered_metrics

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "conf" / "grafana-txstate-executors.json"
RULES = ROOT / "conf" / "jmx-exporter-txstate.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"
# The prefix the exporter rules give every metric: txstate_<metric name as the plugin registers it>.
PREFIX = "txstate_"


def expressions(node: object) -> Iterator[str]:
    """Every PromQL expression of the dashboard: panel targets and template variable queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                yield value
            elif key == "query" and isinstance(value, dict) and isinstance(value.get("query"), str):
                yield value["query"]
            else:
                yield from expressions(value)
    elif isinstance(node, list):
        for item in node:
            yield from expressions(item)


def test_every_metric_a_panel_uses_is_one_the_plugin_registers() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    used = {name for expr in expressions(dashboard) for name in re.findall(PREFIX + r"(\w+)", expr)}
    assert used, f"{DASHBOARD.name} queries no {PREFIX}* metric"
    unknown = used - set(registered_metrics())
    assert not unknown, f"{DASHBOARD.name} plots metrics the plugin does not register: {sorted(unknown)}"
    assert all(panel["targets"] for panel in dashboard["panels"]), "a panel without a query"


def test_every_registered_metric_has_a_panel() -> None:
    text = DASHBOARD.read_text()
    missing = [name for name in registered_metrics() if PREFIX + name not in text]
    assert not missing, f"{DASHBOARD.name} has no panel for {missing}"


def test_the_exporter_rules_name_metrics_as_the_dashboard_reads_them() -> None:
    rules = RULES.read_text()
    assert SOURCE_NAME.replace(".", r"\.") in rules, f"{RULES.name} does not match Spark's source name {SOURCE_NAME}"
    assert f"name: {PREFIX}$3" in rules


def test_the_operations_page_lists_every_registered_metric_with_its_kind() -> None:
    text = OPERATIONS.read_text()
    for name, kind in registered_metrics().items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"docs/operations.md, Executor metrics: no row for `{name}`"
        assert f"| {kind} |" in row, f"docs/operations.md: `{name}` is a {kind}: {row}"
