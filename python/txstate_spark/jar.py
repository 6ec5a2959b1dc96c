"""Locating the txstate-spark plugin jar."""

import os
from pathlib import Path

from txstate_spark._version import __version__
from txstate_spark.constants import JAR_ENV_VAR
from txstate_spark.errors import TxStateJarNotFoundError

#: File name of the jar built by ``make jar`` and bundled in the wheel.
JAR_FILE_NAME = f"txstate-spark_2.13-{__version__}.jar"

_BUNDLED_JARS_DIR = Path(__file__).resolve().parent / "jars"


def bundled_jar_path() -> Path:
    """Return where the wheel puts the jar (the file may not exist in a source checkout)."""
    return _BUNDLED_JARS_DIR / JAR_FILE_NAME


def jar_path() -> str:
    """Return the absolute path of the txstate-spark jar.

    ``$TXSTATE_SPARK_JAR`` wins when it is set (and must then name an existing file); otherwise the
    jar bundled inside this installed package is used.

    Raises:
        TxStateJarNotFoundError: the variable names a missing file, or no jar is bundled.
    """
    from_env = os.environ.get(JAR_ENV_VAR, "").strip()
    if from_env:
        path = Path(from_env).expanduser()
        if not path.is_file():
            raise TxStateJarNotFoundError(
                f"${JAR_ENV_VAR} is set to {from_env!r}, but no such file exists. "
                f"Build it with `make jar`, point ${JAR_ENV_VAR} at an existing {JAR_FILE_NAME}, "
                f"or unset ${JAR_ENV_VAR} to use the jar bundled in the txstate-spark wheel."
            )
        return str(path.resolve())
    bundled = bundled_jar_path()
    if bundled.is_file():
        return str(bundled)
    raise TxStateJarNotFoundError(
        f"The txstate-spark jar was not found: ${JAR_ENV_VAR} is not set and the package has no "
        f"bundled jar at {bundled}. Install the wheel (`pip install "
        f"dist/txstate_spark-{__version__}-py3-none-any.whl`, built by `make wheel`), or build the "
        f"jar with `make jar` and set {JAR_ENV_VAR}=<repo>/target/{JAR_FILE_NAME}."
    )
