"""Locating the txstate-spark plugin jar for the Spark that will run it.

There is one jar per Spark line and Scala version (``txstate-spark-<line>_<scala>-<version>.jar``):
Spark's provider interface differs between lines, and a jar built for another line or Scala version
fails at run time. The wheel bundles every jar; the line comes from the caller, ``$SPARK_HOME`` or
the installed pyspark, and so does the Scala version where a line has jars for two (Spark 3.5:
2.12, what pyspark ships, and 2.13).
"""

import difflib
import os
import re
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

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


def _line_key(line: str) -> Tuple[int, int]:
    major, minor = line.split(".")
    return int(major), int(minor)


def closest_line(line: str, lines: Iterable[str]) -> Optional[str]:
    """The Spark line of ``lines`` nearest ``line`` (``"4.3"`` for ``"4.4"`` or ``"5.0"``, ``"3.5"`` for
    ``"3.4"``): the newest line below it or the oldest above it, the one of the same major version when
    only one is, else the one fewer minor versions away (the older on a tie); None if ``lines`` is empty."""
    ordered = sorted(set(lines), key=_line_key)
    if line in ordered or not ordered:
        return line if ordered else None
    want = _line_key(line)
    below = [other for other in ordered if _line_key(other) < want][-1:]
    above = [other for other in ordered if _line_key(other) > want][:1]
    neighbours = below + above
    same_major = [other for other in neighbours if _line_key(other)[0] == want[0]]
    if not same_major:
        return neighbours[0]
    return min(same_major, key=lambda other: abs(_line_key(other)[1] - want[1]))


def closest_scala(scala: str, versions: Iterable[str]) -> Optional[str]:
    """The Scala version of ``versions`` nearest ``scala`` (``"2.12"`` for ``"2.11"``, ``"2.13"`` for
    ``"3.3"``; the newer on a tie or when ``scala`` is no version); None if ``versions`` is empty."""
    match = re.match(r"^(\d+)\.(\d+)", scala.strip())
    want = (int(match.group(1)), int(match.group(2))) if match else (99, 99)
    def distance(version: str) -> Tuple[int, int]:
        major, minor = _line_key(version)
        return abs(major - want[0]), abs(minor - want[1]) if major == want[0] else -minor

    return min(sorted(set(versions), key=_line_key, reverse=True), key=distance, default=None)


def describe_jars(jars: Iterable[Tuple[str, str]]) -> str:
    """The Spark lines of jars given as (line, Scala version), oldest first, each line's Scala versions
    named where they are not just 2.13: ``3.5 (Scala 2.12, 2.13), 4.0, 4.1``."""
    scalas: Dict[str, List[str]] = {}
    for line, scala in jars:
        scalas.setdefault(line, []).append(scala)
    return ", ".join(line if scalas[line] == ["2.13"] else f"{line} (Scala {', '.join(sorted(scalas[line]))})"
                     for line in sorted(scalas, key=_line_key))


def scala_argument(value: str) -> str:
    """``--scala``'s type: a Scala version txstate-spark builds jars for (argparse exits 2 on another)."""
    import argparse

    try:
        return _checked_scala(value)
    except TxStateUnsupportedSparkError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _checked_scala(scala: str) -> str:
    if scala in SCALA_VERSIONS:
        return scala
    closest = closest_scala(scala, SCALA_VERSIONS)
    bundled = _bundled()
    has = f"; this package has jars for Spark {describe_jars(bundled)}" if bundled else ""
    raise TxStateUnsupportedSparkError(
        f"no jar for Scala {scala!r}: txstate-spark builds jars for Scala {', '.join(SCALA_VERSIONS)}{has}; "
        f"the closest is {closest} (--scala {closest}, jar_path(scala=\"{closest}\")).")


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
    if scala is not None:
        _checked_scala(scala)
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
            f"Spark {describe_jars(_bundled())})."
        )
    candidates: Dict[str, Path] = {s: jar for (line, s), jar in _bundled().items() if line == wanted.line}
    if not candidates:
        closest = closest_line(wanted.line, (line for line, _ in _bundled()))
        raise TxStateUnsupportedSparkError(
            f"no jar for Spark {wanted.version} ({wanted.source}): txstate-spark {__version__} has jars for "
            f"Spark {describe_jars(_bundled())}; the closest is {closest}. Run on one of those Spark lines, or "
            f"pick one explicitly: --spark {closest}, jar_path(spark=\"{closest}\")."
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
        closest = closest_scala(chosen_scala, candidates)
        raise TxStateUnsupportedSparkError(
            f"txstate-spark {__version__} has no jar for Spark {wanted.line} on Scala {chosen_scala} "
            f"({wanted.source}): it has Scala {', '.join(sorted(candidates))} for that line; the closest is "
            f"Scala {closest} (--scala {closest}). Its jars: Spark {describe_jars(_bundled())}."
        )
    scala_source = "as asked" if scala else ("that Spark's" if wanted.scala else "the only one built for that line")
    return str(jar), (f"Spark {wanted.version} ({wanted.source}) with Scala {chosen_scala} ({scala_source}): "
                      f"{jar.name}, bundled in this package.")


def _jars_beside(path: Path) -> Dict[Path, Tuple[str, str]]:
    """The txstate-spark jars (any version) in the directory of ``path``, with their (line, Scala)."""
    if not path.parent.is_dir():
        return {}
    found = {jar: _JAR_NAME.match(jar.name) for jar in sorted(path.parent.iterdir())}
    return {jar: (match.group(1), match.group(2)) for jar, match in found.items() if match}


def _closest_jar(path: Path, jars: Dict[Path, Tuple[str, str]], wanted: Optional[SparkVersion]) -> Path:
    """The jar of ``jars`` most likely meant instead of ``path``: this version's jar for the Spark that
    will run when there is one, else the one whose name is most like ``path``'s."""
    if wanted is not None:
        for jar, (line, scala) in jars.items():
            if line == wanted.line and scala == (wanted.scala or scala) and jar.name.endswith(f"-{__version__}.jar"):
                return jar
    names = [jar.name for jar in jars]
    return path.parent / difflib.get_close_matches(path.name, names, n=1, cutoff=0)[0]


def _missing_env_jar(value: str, path: Path, wanted: Optional[SparkVersion]) -> TxStateJarNotFoundError:
    jars = _jars_beside(path)
    if not path.parent.is_dir():
        beside = f" (nor does its directory {path.parent})"
    elif not jars:
        beside = f"; {path.parent} holds no txstate-spark jar"
    else:
        beside = (f"; {path.parent} holds {', '.join(jar.name for jar in jars)}; the closest is "
                  f"{_closest_jar(path, jars, wanted).name}")
    bundled = _bundled()
    unset = (f"unset ${JAR_ENV_VAR} to use the jars bundled in this package (Spark {describe_jars(bundled)})"
             if bundled else f"unset ${JAR_ENV_VAR} to use the jar bundled in the txstate-spark wheel")
    return TxStateJarNotFoundError(
        f"${JAR_ENV_VAR} is set to {value!r}, but no such file exists{beside}. Build it with `make jar`, point "
        f"${JAR_ENV_VAR} at an existing jar, or {unset}."
    )


def _jar_from_env(value: str, wanted: Optional[SparkVersion]) -> str:
    path = Path(value).expanduser()
    if not path.is_file():
        raise _missing_env_jar(value, path, wanted)
    match = _JAR_NAME.match(path.name)
    if match and wanted is not None and wanted.scala is not None and match.group(1) == wanted.line \
            and match.group(2) != wanted.scala:
        raise TxStateUnsupportedSparkError(
            f"${JAR_ENV_VAR}={value} is built for Scala {match.group(2)}, but Spark {wanted.version} "
            f"({wanted.source}) runs on Scala {wanted.scala}. Point ${JAR_ENV_VAR} at "
            f"{jar_file_name(wanted.line, wanted.scala)}, or unset it to use the bundled jar."
        )
    if match and wanted is not None and match.group(1) != wanted.line:
        raise TxStateUnsupportedSparkError(
            f"${JAR_ENV_VAR}={value} is built for Spark {match.group(1)}, but Spark {wanted.version} "
            f"({wanted.source}) will run it. {_jar_for_line(path, wanted)}"
        )
    return str(path.resolve())


def _jar_for_line(path: Path, wanted: SparkVersion) -> str:
    """What to do when ``path`` is a jar of another Spark line: point at the right one, or build it,
    or, when neither its directory nor this package has a jar for that line, pick the closest line."""
    right_jar = jar_file_name(wanted.line, wanted.scala or "2.13")
    known = {*_jars_beside(path).values(), *_bundled()}
    if (path.parent / right_jar).is_file():
        return f"Point ${JAR_ENV_VAR} at {path.parent / right_jar}, or unset it to use the bundled jar."
    if wanted.line in {line for line, _ in known}:
        return (f"Point ${JAR_ENV_VAR} at {right_jar} (`make jar SPARK={wanted.line}`), or unset it to use "
                "the bundled jar.")
    closest = closest_line(wanted.line, (line for line, _ in known))
    return (f"There is no jar for Spark {wanted.line} ({right_jar}): {path.parent} and this package have "
            f"jars for Spark "
            f"{describe_jars(known)}; the closest is {closest}. Run on one of those Spark lines, or name one: "
            f"--spark {closest}, jar_path(spark=\"{closest}\").")
