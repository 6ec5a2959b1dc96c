"""Locating the txstate-spark plugin jar for the Spark that will run it.

There is one jar per Spark line and Scala version (``txstate-spark-<line>_<scala>-<version>.jar``):
Spark's provider interface differs between lines, and a jar built for another line or Scala version
fails at run time. The wheel bundles every jar; the line comes from the caller, ``$SPARK_HOME`` or
the installed pyspark, and so does the Scala version where a line has jars for two (Spark 3.5:
2.12, what pyspark ships, and 2.13).
"""

import os
import re
from pathlib import Path
from typing import Dict, Optional, Tuple

from txstate_spark._version import __version__
from txstate_spark.constants import JAR_ENV_VAR
from txstate_spark.errors import TxStateJarNotFoundError, TxStateUnsupportedSparkError
from txstate_spark.spark_line import SparkVersion, detect_spark

_BUNDLED_JARS_DIR = Path(__file__).resolve().parent / "jars"
_JAR_NAME = re.compile(r"^txstate-spark-(\d+\.\d+)_(2\.1[23])-(.+)\.jar$")
#: The Scala versions txstate-spark builds jars for (Spark 3.5 has both; 4.x only 2.13).
SCALA_VERSIONS = ("2.12", "2.13")


def jar_file_name(line: str, scala: str = "2.13") -> str:
    """The file name of the jar for a Spark line, e.g. ``txstate-spark-4.1_2.13-0.2.0.jar``."""
    return f"txstate-spark-{line}_{scala}-{__version__}.jar"


def _bundled() -> Dict[Tuple[str, str], Path]:
    """The jars inside this installed package by (Spark line, Scala version)."""
    if not _BUNDLED_JARS_DIR.is_dir():
        return {}
    found = {}
    for jar in _BUNDLED_JARS_DIR.iterdir():
        match = _JAR_NAME.match(jar.name)
        if match and match.group(3) == __version__:
            found[(match.group(1), match.group(2))] = jar
    return found


def bundled_jars() -> Dict[str, Path]:
    """The jars inside this installed package (empty in a source checkout), oldest line first, by
    Spark line, or ``<line>_<scala>`` for a line with jars for two Scala versions (``3.5_2.12``)."""
    found = _bundled()
    lines = [line for line, _ in found]
    named = {(line if lines.count(line) == 1 else f"{line}_{scala}"): jar for (line, scala), jar in found.items()}
    return dict(sorted(named.items(), key=lambda item: (tuple(int(p) for p in item[0].split("_")[0].split(".")),
                                                         item[0])))


def supported_lines() -> "list[str]":
    """The Spark lines this installation has a jar for, oldest first."""
    return list(bundled_jars())


def jar_path(spark: Optional[str] = None, scala: Optional[str] = None) -> str:
    """Return the absolute path of the txstate-spark jar for the Spark that will run it.

    Args:
        spark: the Spark line or version to pick the jar for (``"4.1"``, ``"4.1.3"``). By default
            the Spark ``$SPARK_HOME`` points to, else the installed pyspark.
        scala: the Scala version (``"2.12"``, ``"2.13"``) where a line has jars for both. By default
            that Spark's (from its ``spark-core_<scala>`` jar).

    ``$TXSTATE_SPARK_JAR`` wins when it is set (and must then name an existing file, built for that
    Spark line if its name says one); otherwise the matching jar bundled in this package is used.

    Raises:
        TxStateUnsupportedSparkError: no jar for that Spark line (the message names the supported ones).
        TxStateJarNotFoundError: the variable names a missing file, or no jar is bundled.
    """
    return _choose_jar(spark, scala)[0]


def explain_jar_choice(spark: Optional[str] = None, scala: Optional[str] = None) -> str:
    """Which jar :func:`jar_path` picks with these arguments, and why, in one sentence."""
    return _choose_jar(spark, scala)[1]


def _choose_jar(spark: Optional[str], scala: Optional[str]) -> Tuple[str, str]:
    """The jar for the Spark that will run, and the reason for it."""
    if scala is not None and scala not in SCALA_VERSIONS:
        raise TxStateUnsupportedSparkError(
            f"Scala {scala!r} is not one txstate-spark builds for; use one of {', '.join(SCALA_VERSIONS)}.")
    wanted = SparkVersion(spark, "requested") if spark else detect_spark()
    from_env = os.environ.get(JAR_ENV_VAR, "").strip()
    if from_env:
        return _jar_from_env(from_env, wanted), f"${JAR_ENV_VAR} names {from_env} (it wins over the bundled jars)."
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
    candidates: Dict[str, Path] = {s: jar for (line, s), jar in _bundled().items() if line == wanted.line}
    if not candidates:
        raise TxStateUnsupportedSparkError(
            f"txstate-spark {__version__} has no jar for Spark {wanted.version} ({wanted.source}): it "
            f"supports Spark {', '.join(bundled)}. Run it on one of those, or pick one explicitly "
            "with --spark / jar_path(spark=...)."
        )
    chosen_scala = scala or wanted.scala
    if chosen_scala is None and len(candidates) > 1:
        raise TxStateUnsupportedSparkError(
            f"Cannot tell which Scala version Spark {wanted.version} ({wanted.source}) is built for, and "
            f"txstate-spark has jars for Scala {', '.join(sorted(candidates))} of it: name it, "
            "jar_path(scala=\"2.12\") or --scala 2.12."
        )
    chosen_scala = chosen_scala or next(iter(candidates))
    jar = candidates.get(chosen_scala)
    if jar is None:
        raise TxStateUnsupportedSparkError(
            f"txstate-spark {__version__} has no jar for Spark {wanted.line} on Scala {chosen_scala} "
            f"({wanted.source}): it has Scala {', '.join(sorted(candidates))} for that line."
        )
    scala_source = "as asked" if scala else ("that Spark's" if wanted.scala else "the only one built for that line")
    return str(jar), (f"Spark {wanted.version} ({wanted.source}) with Scala {chosen_scala} ({scala_source}): "
                      f"{jar.name}, bundled in this package.")


def _jar_from_env(value: str, wanted: Optional[SparkVersion]) -> str:
    path = Path(value).expanduser()
    if not path.is_file():
        raise TxStateJarNotFoundError(
            f"${JAR_ENV_VAR} is set to {value!r}, but no such file exists. Build it with `make jar`, "
            f"point ${JAR_ENV_VAR} at an existing jar, or unset ${JAR_ENV_VAR} to use the jar "
            "bundled in the txstate-spark wheel."
        )
    match = _JAR_NAME.match(path.name)
    if match and wanted is not None and wanted.scala is not None and match.group(1) == wanted.line \
            and match.group(2) != wanted.scala:
        raise TxStateUnsupportedSparkError(
            f"${JAR_ENV_VAR}={value} is built for Scala {match.group(2)}, but Spark {wanted.version} "
            f"({wanted.source}) runs on Scala {wanted.scala}. Point ${JAR_ENV_VAR} at "
            f"{jar_file_name(wanted.line, wanted.scala)}, or unset it to use the bundled jar."
        )
    if match and wanted is not None and match.group(1) != wanted.line:
        right_jar = jar_file_name(wanted.line, wanted.scala or "2.13")
        raise TxStateUnsupportedSparkError(
            f"${JAR_ENV_VAR}={value} is built for Spark {match.group(1)}, but Spark {wanted.version} "
            f"({wanted.source}) will run it. Point ${JAR_ENV_VAR} at {right_jar} "
            f"(`make jar SPARK={wanted.line}`), or unset it to use the bundled jar."
        )
    return str(path.resolve())

