"""``jar`` and ``submit-args``: the jar for the Spark that will run it, and the flags that load it."""

from __future__ import annotations

import argparse
import shlex
import sys

from txstate_spark.cli import options
from txstate_spark.jar import SCALA_VERSIONS, explain_jar_choice, jar_path, scala_argument, supported_lines
from txstate_spark.settings.names import KNOWN_SETTINGS
from txstate_spark.submit import submit_args


def add_jar(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    jar = commands.add_parser(
        "jar",
        help="print the absolute path of the jar",
        description="Print the absolute path of the txstate-spark jar for the Spark that will run it "
        "($TXSTATE_SPARK_JAR if set, else the matching jar bundled in the installed wheel).",
    )
    _add_jar_choice(jar)


def add_submit_args(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    submit = commands.add_parser(
        "submit-args",
        help="print --jars/--conf flags for spark-submit or pyspark, shell-quoted on one line",
        description="Print the --jars and --conf flags that load the jar, select the txstate "
        "provider and enable its executor metrics plugin (spark.plugins), shell-quoted on one line, e.g. spark-submit $(python -m txstate_spark "
        "submit-args) app.py",
    )
    submit.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        type=options.option,
        metavar="NAME=VALUE",
        help="a txstate setting, snake_case or camelCase (becomes "
        "spark.sql.streaming.stateStore.txstate.<camelCaseName>), checked as the jar checks it; "
        "repeatable. Settings: " + ", ".join(KNOWN_SETTINGS) + ". Sizes take k, m, g or t (64m, 64MB, "
        "1g; the *SizeMB settings a plain number of MiB too), durations ms, s, m or min, h or d (30min, "
        "7d) or off",
    )
    submit.add_argument(
        "--ttl-operator",
        action="append",
        default=[],
        type=options.operator_ttl,
        metavar="ID=DURATION",
        help="the state TTL of one stateful operator (ID: its folder under the checkpoint's state/), "
        "e.g. 0=30min, or 2=off to exempt it from --option ttl=...; becomes "
        "spark.sql.streaming.stateStore.txstate.ttl.operator.<ID>; repeatable",
    )
    submit.add_argument(
        "--plugins",
        metavar="LIST",
        help="the spark.plugins your job sets already (comma-separated): printed as one "
        "--conf spark.plugins=LIST,txstate.spark.TxStatePlugin, since a later --conf spark.plugins "
        "replaces an earlier one; default: txstate's executor metrics plugin alone",
    )
    _add_jar_choice(submit)


def _add_jar_choice(command: argparse.ArgumentParser) -> None:
    """The flags both commands pick the jar by."""
    command.add_argument(
        "--spark",
        metavar="LINE",
        help="the Spark line or version to pick the jar for (e.g. 4.1 or 4.1.3); default: "
        "$SPARK_HOME's Spark, else the installed pyspark's. Supported: "
        + (", ".join(supported_lines()) or "none bundled (source checkout)"),
    )
    command.add_argument(
        "--scala",
        type=scala_argument,
        metavar="{" + ",".join(SCALA_VERSIONS) + "}",
        help="the Scala version of that Spark, where a line has jars for two (Spark 3.5); default: "
        "that Spark's own (its spark-core_<scala> jar)",
    )
    command.add_argument("--explain", action="store_true",
                         help="also say on stderr which jar was chosen and why")


def run_jar(args: argparse.Namespace) -> int:
    _explain(args)
    print(jar_path(args.spark, args.scala))
    return 0


def run_submit_args(args: argparse.Namespace) -> int:
    _explain(args)
    print(shlex.join(submit_args(args.spark, scala=args.scala, ttl_by_operator=dict(args.ttl_operator),
                                 plugins=args.plugins, **dict(args.option))))
    return 0


def _explain(args: argparse.Namespace) -> None:
    if args.explain:
        print(f"txstate-spark: {explain_jar_choice(args.spark, args.scala)}", file=sys.stderr)
