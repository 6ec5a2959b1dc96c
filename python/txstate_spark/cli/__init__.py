"""``python -m txstate_spark``: print the jar path or the spark-submit flags, migrate, serve, inspect or verify.

    python -m txstate_spark jar [--spark LINE] [--scala 2.12|2.13] [--explain]
    python -m txstate_spark submit-args [--spark LINE] [--scala 2.12|2.13] [--option NAME=VALUE ...] [--ttl-operator ID=DURATION ...] [--plugins LIST]
    python -m txstate_spark migrate CHECKPOINT --to {txstate,rocksdb,hdfs} [--dry-run] [--undo] ...
    python -m txstate_spark serve CHECKPOINT --operator OP [--port P] ...   (docs/serving.md)
    python -m txstate_spark inspect CHECKPOINT [--json]
    python -m txstate_spark verify CHECKPOINT [--deep] [--min-batches-to-retain N]

One module per command (``jar`` holds ``submit-args`` too): each adds its subcommand to the parser
and runs it. Here: the parser, and the errors every command turns into an exit status.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Dict, List, Optional

from txstate_spark._version import __version__
from txstate_spark.cli import inspect, jar, migrate, serve, verify
from txstate_spark.errors import TxStateCheckpointError, TxStateError, TxStateMigrationError, TxStateSettingError

_RUNS: Dict[str, Callable[[argparse.Namespace], int]] = {
    "jar": jar.run_jar,
    "submit-args": jar.run_submit_args,
    "migrate": migrate.run_migrate,
    "serve": serve.run_serve,
    "inspect": inspect.run_inspect,
    "verify": verify.run_verify,
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (the documentation's tests read its flags)."""
    parser = argparse.ArgumentParser(
        prog="python -m txstate_spark",
        description="Locate the txstate-spark jar and print the Spark flags that install its "
        "state store provider (txstate.spark.TxStateStoreProvider).",
    )
    parser.add_argument("--version", action="version", version=f"txstate-spark {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    jar.add_jar(commands)
    jar.add_submit_args(commands)
    migrate.add_migrate(commands)
    serve.add_serve(commands)
    inspect.add_inspect(commands)
    verify.add_verify(commands)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; return the process exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _RUNS[args.command](args)
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
