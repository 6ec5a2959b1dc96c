"""Which Spark line (``major.minor``) the jar must be built for.

The Spark that will run is, in the order PySpark itself decides it: ``$SPARK_HOME`` when it is set
(pyspark launches that Spark's ``spark-submit``), else the installed ``pyspark`` package. Neither is
imported: the version comes from ``$SPARK_HOME``'s files and the package's metadata.
"""

import os
import re
from importlib import metadata
from pathlib import Path
from typing import NamedTuple, Optional

from txstate_spark.errors import TxStateUnsupportedSparkError

_LINE = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[.+-].*)?$")
_CORE_JAR = re.compile(r"^spark-core_2\.13-(\d+\.\d+\.\d+[^/]*)\.jar$")
_RELEASE = re.compile(r"^Spark (\d+\.\d+\.\d+\S*)")


class SparkVersion(NamedTuple):
    """A Spark version and where it was found (for messages)."""

    version: str
    source: str

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
        return SparkVersion(metadata.version("pyspark"), "the installed pyspark package")
    except metadata.PackageNotFoundError:
        return None


def _spark_home_version(home: Path) -> SparkVersion:
    source = f"$SPARK_HOME={home}"
    release = home / "RELEASE"
    if release.is_file():
        match = _RELEASE.match(release.read_text(encoding="utf-8", errors="replace").strip())
        if match:
            return SparkVersion(match.group(1), source)
    jars = home / "jars"
    if jars.is_dir():
        for jar in sorted(jars.iterdir()):
            match = _CORE_JAR.match(jar.name)
            if match:
                return SparkVersion(match.group(1), source)
    raise TxStateUnsupportedSparkError(
        f"Cannot tell which Spark {source} is: it has neither a RELEASE file nor jars/spark-core_2.13-*.jar. "
        "Fix or unset $SPARK_HOME, or name the Spark line explicitly (--spark 4.1, jar_path(spark=\"4.1\"))."
    )
