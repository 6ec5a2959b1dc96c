"""``python -m txstate_spark serve``: a follower of one store answering queries over HTTP.

The Python process only assembles the JVM's command line and then becomes that JVM (``os.execv``),
so signals (SIGTERM from a supervisor) reach the JVM directly and it closes its follower. No Spark
session runs: the JVM needs the txstate jar and Spark's jars (for the key encoders) on its
classpath, both found through the installed packages. The endpoints are in ``docs/serving.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import List

from txstate_spark.cli import options
from txstate_spark.errors import TxStateConfigurationError
from txstate_spark.jar import jar_path

MAIN_CLASS = "txstate.serve.ServeMain"

#: The JDK modules Spark's classes reach into by reflection (off-heap buffers, the cleaner,
#: serializers): opened to the classpath so JDK 17+ does not refuse them.
_OPENED_PACKAGES = (
    "java.base/java.lang",
    "java.base/java.lang.invoke",
    "java.base/java.lang.reflect",
    "java.base/java.io",
    "java.base/java.net",
    "java.base/java.nio",
    "java.base/java.util",
    "java.base/java.util.concurrent",
    "java.base/java.util.concurrent.atomic",
    "java.base/jdk.internal.ref",
    "java.base/sun.nio.ch",
    "java.base/sun.nio.cs",
    "java.base/sun.security.action",
    "java.base/sun.util.calendar",
)

#: Inside the txstate jar: warnings to stderr, txstate's own messages at info (stdout stays for the
#: one "listening on" line).
_LOG_CONFIG = "txstate-serve-log4j2.properties"

# Flags passed on to the JVM unchanged when given (their defaults live in one place: ServeOptions).
_FORWARDED = ("operator", "store", "partitions", "host", "port", "token_file", "keystore", "keystore_password_env",
              "poll_interval_ms", "local_dir", "max_request_bytes", "max_page", "max_concurrent")


def add_serve(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``serve`` subcommand to the command line."""
    serve = commands.add_parser(
        "serve",
        help="follow a streaming query's state and answer lookups over HTTP (JSON)",
        description="Start a follower of one store of a streaming query (a read-only replica of its "
        "committed state, tailing the query's commit log) and answer key, multi-key, range, prefix and "
        "scan queries over HTTP. Needs no Spark cluster. See docs/serving.md.",
    )
    serve.add_argument("checkpoint", metavar="CHECKPOINT", help="the query's checkpointLocation (path or URI)")
    serve.add_argument("--operator", required=True, metavar="OP",
                       help="the stateful operator: its id (0, 1, ...) or name (stateStoreSave, dedupe, ...)")
    serve.add_argument("--store", metavar="S", help="the store name within the operator (default: default)")
    serve.add_argument("--partitions", metavar="0,1", help="the partitions to follow (default: all)")
    serve.add_argument("--host", metavar="H",
                       help="the address to listen on (default 127.0.0.1; any other address requires a token)")
    serve.add_argument("--port", type=int, metavar="P", help="the port (default 8470; 0: any free port)")
    serve.add_argument("--token-file", metavar="F",
                       help="a file whose first line is the bearer token (or set $TXSTATE_SERVE_TOKEN)")
    serve.add_argument("--keystore", metavar="K", help="a PKCS12 or JKS keystore: serve HTTPS")
    serve.add_argument("--keystore-password-env", metavar="VAR",
                       help="the environment variable holding the keystore password "
                       "(default TXSTATE_SERVE_KEYSTORE_PASSWORD)")
    serve.add_argument("--poll-interval-ms", type=int, metavar="N",
                       help="how often the query's commit log is checked (default 200)")
    serve.add_argument("--local-dir", metavar="D",
                       help="where the replicas' local databases go (default: the JVM's java.io.tmpdir)")
    serve.add_argument("--max-request-bytes", type=int, metavar="N", help="largest request body (default 1048576)")
    serve.add_argument("--max-page", type=int, metavar="N", help="largest page 'limit' (default 10000)")
    serve.add_argument("--max-concurrent", type=int, metavar="N",
                       help="queries answered at once; more get 503 (default 16)")
    serve.add_argument("--conf", action="append", default=[], type=options.spark_conf, metavar="KEY=VALUE",
                       help="spark.hadoop.* (the checkpoint's file system) or "
                       "spark.sql.streaming.stateStore.txstate.* (RocksDB memory; checked at once); repeatable")
    serve.add_argument("--java-option", action="append", default=[], metavar="OPT",
                       help="an option for the JVM, e.g. -Xmx1g; repeatable")


def java_command(args: argparse.Namespace) -> List[str]:
    """The JVM command line that serves ``args`` (``argv[0]`` is the ``java`` executable)."""
    classpath = os.pathsep.join([jar_path(_pyspark_version()), str(_pyspark_jars() / "*")])
    command = [_java(), *[f"--add-opens={p}=ALL-UNNAMED" for p in _OPENED_PACKAGES],
               "-XX:+IgnoreUnrecognizedVMOptions", f"-Dlog4j2.configurationFile={_LOG_CONFIG}",
               *args.java_option, "-cp", classpath, MAIN_CLASS, _absolute(args.checkpoint)]
    for name in _FORWARDED:
        value = getattr(args, name)
        if value is not None:
            command += [f"--{name.replace('_', '-')}", str(value)]
    for key, value in args.conf:
        command += ["--conf", f"{key}={value}"]
    return command


def run_serve(args: argparse.Namespace) -> int:
    """Become the serving JVM; returns only if it cannot be started."""
    command = java_command(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)
    return 1  # not reached: execv replaces this process or raises OSError


def _absolute(checkpoint: str) -> str:
    # A local path without a scheme is made absolute, as the query client does (docs/query-protocol.md).
    return checkpoint if "://" in checkpoint or checkpoint.startswith("file:") else str(Path(checkpoint).resolve())


def _pyspark_dir() -> Path:
    try:
        import pyspark
    except ImportError as error:
        raise TxStateConfigurationError(
            "serve needs pyspark installed (its jars provide Spark's key encoders): pip install pyspark"
        ) from error
    return Path(pyspark.__file__).resolve().parent


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _pyspark_jars() -> Path:
    jars = _pyspark_dir() / "jars"
    if not jars.is_dir():
        raise TxStateConfigurationError(
            f"the installed pyspark at {jars.parent} has no jars/ directory; install pyspark from PyPI "
            "(pip install pyspark), not a client-only package"
        )
    return jars


def _java() -> str:
    home = os.environ.get("JAVA_HOME", "").strip()
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return str(java)
        raise TxStateConfigurationError(f"$JAVA_HOME is {home}, but {java} is not an executable; fix or unset JAVA_HOME")
    found = shutil.which("java")
    if found is None:
        raise TxStateConfigurationError(
            "serve needs Java 17 or later: set JAVA_HOME to a JDK or put `java` on PATH"
        )
    return found

