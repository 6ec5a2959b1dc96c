"""Which Spark line (``major.minor``) and Scala version the jar must be built for.

The Spark that will run is, in the order PySpark itself decides it: ``$SPARK_HOME`` when it is set
(pyspark launches that Spark's ``spark-submit``), else the installed ``pyspark`` package. Neither is
imported: the version comes from ``$SPARK_HOME``'s files and the package's metadata, the Scala
version from the name of its ``spark-core_<scala>-<version>.jar``.
"""

import os
import re
from importlib import metadata, util
from pathlib import Path
from typing import NamedTuple, Optional

from txstate_spark.errors import TxStateUnsupportedSparkError

_LINE = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[.+-].*)?$")
_CORE_JAR = re.compile(r"^spark-core_(2\.1[23])-(\d+\.\d+\.\d+[^/]*)\.jar$")
_RELEASE = re.compile(r"^Spark (\d+\.\d+\.\d+\S*)")


class SparkVersion(NamedTuple):
    """A Spark version, where it was found (for messages) and its Scala version when known."""

    version: str
    source: str
    scala: Optional[str] = None

    @property
    def line(self) -> str:
        """``"4.1"`` for ``"4.1.3"``."""
        return line_of(self.version, self.source)


def line_of(version: str, source: str = "the requested version") -> str:
    """``major.minor`` of a Spark version such as ``4.1``, ``4.1.3`` or ``4.2.0.dev1``."""
    match = _LINE.match(version.strip())
    if not match:
        raise TxStateUnsupportedSparkError(
            f"{version!r} ({source}) is not a Spark version; expected a Spark line such as 4.1 or a "
            "release such as 4.1.3"
        )
    return f"{match.group(1)}.{match.group(2)}"


def detect_spark() -> Optional[SparkVersion]:
    """The Spark that will run: ``$SPARK_HOME``'s, else the installed pyspark's; None if neither."""
    home = os.environ.get("SPARK_HOME", "").strip()
    if home:
        return _spark_home_version(Path(home).expanduser())
    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None
    spec = util.find_spec("pyspark")
    jars = Path(spec.origin).parent / "jars" if spec is not None and spec.origin else None
    return SparkVersion(version, "the installed pyspark package", _scala_of_jars(jars) if jars else None)


def _scala_of_jars(jars: Path) -> Optional[str]:
    """The Scala version of the Spark whose jars are in ``jars`` (``2.12``), None if it cannot tell."""
    if jars.is_dir():
        for jar in sorted(jars.iterdir()):
            match = _CORE_JAR.match(jar.name)
            if match:
                return match.group(1)
    return None


def _spark_home_version(home: Path) -> SparkVersion:
    source = f"$SPARK_HOME={home}"
    release = home / "RELEASE"
    scala = _scala_of_jars(home / "jars")
    if release.is_file():
        match = _RELEASE.match(release.read_text(encoding="utf-8", errors="replace").strip())
        if match:
            return SparkVersion(match.group(1), source, scala)
    jars = home / "jars"
    if jars.is_dir():
        for jar in sorted(jars.iterdir()):
            match = _CORE_JAR.match(jar.name)
            if match:
                return SparkVersion(match.group(2), source, match.group(1))
    raise TxStateUnsupportedSparkError(
        f"Cannot tell which Spark {source} is: it has neither a RELEASE file nor jars/spark-core_<scala>-*.jar. "
        "Fix or unset $SPARK_HOME, or name the Spark line explicitly (--spark 4.1, jar_path(spark=\"4.1\"))."
    )
