"""The guide's reference pages (docs/reference/) against the code that defines what they list.

Adding a setting, metric, error code or command line flag without documenting it fails here, and so
does a page row naming one that no longer exists. The pages are written by hand; these tests read
their markdown tables.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Dict, List, Set

from txstate_spark.cli import build_parser
from txstate_spark.settings.spec import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
SCALA = ROOT / "jvm" / "src" / "main"
CODE = re.compile(r"`(TXSTATE_[A-Z_]+)`")


def table_rows(markdown: str) -> List[List[str]]:
    """The body rows of every table in ``markdown``, as lists of stripped cells."""
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.fullmatch(r"\|[-| :]+\|", line):
            continue
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def sections(markdown: str) -> Dict[str, str]:
    """The text under each ``## `name` `` heading of ``markdown``, by name."""
    parts = re.split(r"^## `([^`]+)`\s*$", markdown, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_settings_page_lists_every_setting_of_the_specification_as_it_says() -> None:
    page = (REFERENCE / "settings.md").read_text()
    rows = {row[0].strip("`"): row for row in table_rows(page) if row[0].startswith("`spark.sql.streaming")}
    assert sorted(rows) == sorted(s.key for s in SETTINGS.values()), (
        "docs/reference/settings.md must have one row per setting of python/txstate_spark/settings/settings.json")
    for setting in SETTINGS.values():
        _, default, takes, example, meaning = rows[setting.key]
        expected_default = f"`{setting.default}`" if setting.default is not None else "computed (see meaning)"
        assert (default, takes, example, meaning) == (expected_default, setting.expects, f"`{setting.example}`",
                                                      setting.meaning), f"the row of {setting.key} differs"


def declared_metrics() -> Dict[str, str]:
    """Every custom metric the provider declares, with its kind (sum, size, timing or instance)."""
    source = (SCALA / "scala" / "txstate" / "spark" / "TxStateMetrics.scala").read_text()
    metrics = {name: kind.lower() for kind, name in
               re.findall(r'StateStoreCustom(Sum|Size|Timing)Metric\("(\w+)"', source)}
    for instance_metrics in SCALA.glob("scala-spark-*/txstate/spark/InstanceMetrics.scala"):
        if "StateStoreSnapshotLastUploadInstanceMetric" in instance_metrics.read_text():
            metrics["SnapshotLastUploaded"] = "instance"
    return metrics


def test_the_metrics_page_lists_every_metric_the_provider_declares_with_its_kind() -> None:
    declared = declared_metrics()
    assert "txstateCommitLatencyMs" in declared and "SnapshotLastUploaded" in declared  # the parsing works
    rows = {row[0].strip("`"): row[1] for row in table_rows((REFERENCE / "metrics.md").read_text())
            if row[0].startswith("`")}
    assert rows == declared, "docs/reference/metrics.md: metric rows (name, kind) differ from TxStateMetrics"


def error_codes() -> Set[str]:
    """Every error code the jar and the Python package raise, the two families built at run time expanded."""
    sources = [*SCALA.rglob("*.scala"), *(ROOT / "python" / "txstate_spark").rglob("*.py")]
    text = "\n".join(path.read_text() for path in sources)
    environment = set(re.findall(r'"(TXSTATE_[A-Z_]+)"', (SCALA / "scala/txstate/serve/ServeOptions.scala")
                                 .read_text())) | {"TXSTATE_SPARK_JAR"}
    codes = {c for c in re.findall(r"TXSTATE_[A-Z_]*[A-Z](?![A-Z_])", text)} - environment
    migration = (SCALA / "scala" / "txstate" / "migrate" / "MigrationErrors.scala").read_text()
    codes |= {f"TXSTATE_MIGRATION_{kind}" for kind in re.findall(r'refused\("([A-Z_]+)"', migration)}
    reasons = (SCALA / "scala" / "txstate" / "query" / "FailureReason.scala").read_text()
    codes |= {f"TXSTATE_SOURCE_{reason}" for reason in re.findall(r'extends FailureReason\("([A-Z_]+)"\)', reasons)}
    return codes


def test_the_error_page_explains_every_error_code_and_no_other() -> None:
    codes = error_codes()
    assert len(codes) > 100 and "TXSTATE_INVALID_SETTING" in codes  # the collection works
    rows = table_rows((REFERENCE / "errors.md").read_text())
    documented = [CODE.fullmatch(row[0]).group(1) for row in rows if CODE.fullmatch(row[0])]
    assert len(documented) == len(set(documented)), "docs/reference/errors.md lists a code twice"
    assert sorted(codes - set(documented)) == [], "codes raised in the code but missing from docs/reference/errors.md"
    assert sorted(set(documented) - codes) == [], "codes in docs/reference/errors.md that the code no longer raises"
    for row in rows:
        if CODE.fullmatch(row[0]):
            assert len(row) == 3 and all(len(cell) > 3 for cell in row), f"{row[0]}: a cause and what to do"


def parser_flags() -> Dict[str, Set[str]]:
    """The flags (and the CHECKPOINT argument) of each ``python -m txstate_spark`` command."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    flags = {}
    for name, parser in commands.choices.items():
        flags[name] = set()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flags[name] |= set(action.option_strings) or {str(action.metavar)}
    return flags


def test_the_command_line_page_lists_every_flag_of_every_command() -> None:
    page = sections((REFERENCE / "cli.md").read_text())
    expected = parser_flags()
    assert set(expected) <= set(page), f"docs/reference/cli.md needs a section per command: {sorted(expected)}"
    for command, flags in expected.items():
        documented = set()
        for row in table_rows(page[command]):
            documented |= set(re.findall(r"`(-[-\w]+|CHECKPOINT)`", row[0]))
        assert documented == flags, f"docs/reference/cli.md, `{command}`: flags differ from the parser"


def test_serve_forwards_exactly_the_flags_the_serving_jvm_reads() -> None:
    options = (SCALA / "scala" / "txstate" / "serve" / "ServeOptions.scala").read_text()
    known = re.search(r"private val known = Set\(([^)]*)\)", options, flags=re.S)
    assert known is not None
    jvm_flags = set(re.findall(r'"(--[\w-]+)"', known.group(1))) | {"--conf"}
    python_flags = parser_flags()["serve"] - {"CHECKPOINT", "--java-option"}
    assert python_flags == jvm_flags, "cli/serve.py and ServeOptions.scala disagree on serve's flags"
