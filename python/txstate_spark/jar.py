"""Locating the txstate-spark plugin jar for the Spark that will run it.

There is one jar per Spark line (``txstate-spark-<line>_2.13-<version>.jar``): Spark's provider
interface differs between lines, and a jar built for another line fails at run time. The wheel
bundles every line's jar; the line comes from the caller, ``$SPARK_HOME`` or the installed pyspark.
"""

import os
import re
from pathlib import Path
from typing import Dict, Optional

from txstate_spark._version import __version__
from txstate_spark.constants import JAR_ENV_VAR
from txstate_spark.errors import TxStateJarNotFoundError, TxStateUnsupportedSparkError
from txstate_spark.spark_line import SparkVersion, detect_spark

_BUNDLED_JARS_DIR = Path(__file__).resolve().parent / "jars"
_JAR_NAME = re.compile(r"^txstate-spark-(\d+\.\d+)_2\.13-(.+)\.jar$")


def jar_file_name(line: str) -> str:
    """The file name of the jar for a Spark line, e.g. ``txstate-spark-4.1_2.13-0.2.0.jar``."""
    return f"txstate-spark-{line}_2.13-{__version__}.jar"


def bundled_jars() -> Dict[str, Path]:
    """The jars inside this installed package, by Spark line (empty in a source checkout)."""
    if not _BUNDLED_JARS_DIR.is_dir():
        return {}
    found = {}
    for jar in _BUNDLED_JARS_DIR.iterdir():
        match = _JAR_NAME.match(jar.name)
        if match and match.group(2) == __version__:
            found[match.group(1)] = jar
    return dict(sorted(found.items(), key=lambda item: tuple(int(p) for p in item[0].split("."))))


def supported_lines() -> "list[str]":
    """The Spark lines this installation has a jar for, oldest first."""
    return list(bundled_jars())


def jar_path(spark: Optional[str] = None) -> str:
    """Return the absolute path of the txstate-spark jar for the Spark that will run it.

    Args:
        spark: the Spark line or version to pick the jar for (``"4.1"``, ``"4.1.3"``). By default
            the Spark ``$SPARK_HOME`` points to, else the installed pyspark.

    ``$TXSTATE_SPARK_JAR`` wins when it is set (and must then name an existing file, built for that
    Spark line if its name says one); otherwise the matching jar bundled in this package is used.

    Raises:
        TxStateUnsupportedSparkError: no jar for that Spark line (the message names the supported ones).
        TxStateJarNotFoundError: the variable names a missing file, or no jar is bundled.
    """
    wanted = SparkVersion(spark, "requested") if spark else detect_spark()
    from_env = os.environ.get(JAR_ENV_VAR, "").strip()
    if from_env:
        return _jar_from_env(from_env, wanted)
    bundled = bundled_jars()
    if not bundled:
        raise TxStateJarNotFoundError(
            f"The txstate-spark jar was not found: ${JAR_ENV_VAR} is not set and the package at "
            f"{_BUNDLED_JARS_DIR.parent} bundles no jar. Install the wheel (`pip install "
            f"dist/txstate_spark-{__version__}-py3-none-any.whl`, built by `make wheel`), or build the "
            f"jar with `make jar` and set {JAR_ENV_VAR}=<repo>/target/{jar_file_name('<line>')}."
        )
    if wanted is None:
        raise TxStateUnsupportedSparkError(
            "Cannot tell which Spark will run: $SPARK_HOME is not set and pyspark is not installed. "
            f"Name the Spark line: jar_path(spark=\"4.1\") or --spark 4.1 (this wheel has jars for "
            f"Spark {', '.join(bundled)})."
        )
    jar = bundled.get(wanted.line)
    if jar is None:
        raise TxStateUnsupportedSparkError(
            f"txstate-spark {__version__} has no jar for Spark {wanted.version} ({wanted.source}): it "
            f"supports Spark {', '.join(bundled)}. Run it on one of those, or pick one explicitly "
            "with --spark / jar_path(spark=...)."
        )
    return str(jar)


def _jar_from_env(value: str, wanted: Optional[SparkVersion]) -> str:
    path = Path(value).expanduser()
    if not path.is_file():
        raise TxStateJarNotFoundError(
            f"${JAR_ENV_VAR} is set to {value!r}, but no such file exists. Build it with `make jar`, "
            f"point ${JAR_ENV_VAR} at an existing jar, or unset ${JAR_ENV_VAR} to use the jar "
            "bundled in the txstate-spark wheel."
        )
    match = _JAR_NAME.match(path.name)
    if match and wanted is not None and match.group(1) != wanted.line:
        raise TxStateUnsupportedSparkError(
            f"${JAR_ENV_VAR}={value} is built for Spark {match.group(1)}, but Spark {wanted.version} "
            f"({wanted.source}) will run it. Point ${JAR_ENV_VAR} at {jar_file_name(wanted.line)} "
            f"(`make jar SPARK={wanted.line}`), or unset it to use the bundled jar."
        )
    return str(path.resolve())

