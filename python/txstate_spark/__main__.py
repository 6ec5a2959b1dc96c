"""``python -m txstate_spark``: print the jar path or the spark-submit flags, or migrate a checkpoint.

    python -m txstate_spark jar [--spark LINE] [--scala 2.12|2.13] [--explain]
    python -m txstate_spark submit-args [--spark LINE] [--scala 2.12|2.13] [--option NAME=VALUE ...] [--ttl-operator ID=DURATION ...] [--plugins LIST]
    python -m txstate_spark migrate CHECKPOINT --to {txstate,rocksdb,hdfs} [--dry-run] [--undo] ...
    python -m txstate_spark serve CHECKPOINT --operator OP [--port P] ...   (docs/serving.md)
    python -m txstate_spark inspect CHECKPOINT [--json]
    python -m txstate_spark verify CHECKPOINT [--deep] [--min-batches-to-retain N]
"""

import argparse
import dataclasses
import json
import shlex
import sys
from typing import List, Optional

from txstate_spark import cli_settings
from txstate_spark._version import __version__
from txstate_spark.errors import TxStateCheckpointError, TxStateError, TxStateMigrationError, TxStateSettingError
from txstate_spark.inspect_cli import add_inspect, run_inspect
from txstate_spark.jar import SCALA_VERSIONS, explain_jar_choice, jar_path, scala_argument, supported_lines
from txstate_spark.migration import DEFAULT_ACTIVE_WINDOW_SECONDS, DESTINATIONS
from txstate_spark.serve_cli import add_serve, run_serve
from txstate_spark.settings import KNOWN_SETTINGS
from txstate_spark.submit import submit_args
from txstate_spark.verify_cli import add_verify, run_verify


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m txstate_spark",
        description="Locate the txstate-spark jar and print the Spark flags that install its "
        "state store provider (txstate.spark.TxStateStoreProvider).",
    )
    parser.add_argument("--version", action="version", version=f"txstate-spark {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    jar = commands.add_parser(
        "jar",
        help="print the absolute path of the jar",
        description="Print the absolute path of the txstate-spark jar for the Spark that will run it "
        "($TXSTATE_SPARK_JAR if set, else the matching jar bundled in the installed wheel).",
    )
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
        type=cli_settings.option,
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
        type=cli_settings.operator_ttl,
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
    _add_migrate(commands)
    add_serve(commands)
    add_inspect(commands)
    add_verify(commands)
    for command in (jar, submit):
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
    return parser


def _add_migrate(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    migrate = commands.add_parser(
        "migrate",
        help="move a stopped query's state to another state store provider (or undo that)",
        description="Move the state of a stopped streaming query to another state store provider, so "
        "the query, restarted unchanged, goes on with exactly the state it had. Starts a local Spark "
        "session with the txstate jar. The checkpoint's metadata is saved to "
        "CHECKPOINT/_txstate_migration/<time>/ first; the switch is the last step.",
    )
    migrate.add_argument("checkpoint", metavar="CHECKPOINT", help="the query's checkpointLocation (path or URI)")
    migrate.add_argument("--to", choices=DESTINATIONS, help="the destination provider")
    migrate.add_argument("--partitions", type=int, metavar="N",
                         help="rescale the state to N partitions (the query's shuffle partitions from then on)")
    migrate.add_argument("--dry-run", action="store_true", help="print the plan and row counts, change nothing")
    migrate.add_argument("--undo", action="store_true", help="restore the provider the newest migration replaced")
    migrate.add_argument("--active-window", type=int, default=DEFAULT_ACTIVE_WINDOW_SECONDS, metavar="SECONDS",
                         help="refuse if the query wrote its logs less than this long ago (0: skip the check; "
                         f"default {DEFAULT_ACTIVE_WINDOW_SECONDS})")
    migrate.add_argument("--rollback-uncommitted", action="store_true",
                         help="if the query stopped mid-batch, migrate the last commit's state; the query "
                         "re-runs the unfinished batch on the destination")
    migrate.add_argument("--conf", action="append", default=[], type=cli_settings.spark_conf, metavar="KEY=VALUE",
                         help="a setting for the migration's local Spark session, e.g. spark.driver.memory=8g "
                         "(a heap provider's state is read into memory), spark.hadoop.fs.s3a.* for the checkpoint's "
                         "file system, or spark.sql.streaming.stateStore.txstate.* (checked at once); repeatable")
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")


def _run_migrate(args: argparse.Namespace) -> int:
    if not args.undo and args.to is None:
        print("txstate-spark: error: migrate needs --to (txstate, rocksdb or hdfs) or --undo", file=sys.stderr)
        return 2
    from txstate_spark.migrate_cli import run_in_local_session

    report = run_in_local_session(args)
    print(json.dumps(dataclasses.asdict(report)) if args.json else report.summary())
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; return the process exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "migrate":
            return _run_migrate(args)
        if args.command == "serve":
            return run_serve(args)
        if args.command == "inspect":
            return run_inspect(args)
        if args.command == "verify":
            return run_verify(args)
        if args.explain:
            print(f"txstate-spark: {explain_jar_choice(args.spark, args.scala)}", file=sys.stderr)
        if args.command == "jar":
            print(jar_path(args.spark, args.scala))
        else:
            print(shlex.join(submit_args(args.spark, scala=args.scala, ttl_by_operator=dict(args.ttl_operator),
                                         plugins=args.plugins, **dict(args.option))))
    except TxStateSettingError as error:
        print(f"txstate-spark: error: {error}", file=sys.stderr)
        return 2
    except TxStateCheckpointError as error:
        print(f"txstate-spark: {args.command}: {error}", file=sys.stderr)
        return 2
    except TxStateMigrationError as error:
        print(f"txstate-spark: migrate refused: {error}", file=sys.stderr)
        return 2
    except TxStateError as error:
        print(f"txstate-spark: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
