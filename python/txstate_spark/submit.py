"""Command-line flags for ``spark-submit`` / ``pyspark`` that install the provider."""

from __future__ import annotations

from typing import List, Mapping, Optional

from txstate_spark.constants import PLUGINS_KEY
from txstate_spark.jar import jar_path
from txstate_spark.plugins import with_plugin
from txstate_spark.settings.values import Duration, spark_settings


def submit_args(spark: Optional[str] = None, *, scala: Optional[str] = None,
                ttl_by_operator: Optional[Mapping[int, Duration]] = None, plugins: Optional[str] = None,
                **options: object) -> List[str]:
    """Return ``spark-submit`` flags that load the jar, select the txstate provider and its metrics plugin.

    Example: ``["--jars", "/…/txstate-spark-4.1_2.13-0.2.0.jar", "--conf",
    "spark.plugins=txstate.spark.TxStatePlugin", "--conf",
    "spark.sql.streaming.stateStore.providerClass=txstate.spark.TxStateStoreProvider", ...]``.
    ``spark`` and ``scala`` pick the jar's Spark line and Scala version (see
    :func:`txstate_spark.jar_path`). ``plugins`` is the ``spark.plugins`` the job sets already
    (a later ``--conf spark.plugins`` would replace ours): the flag lists them with ours appended. Keyword options
    are txstate settings, named and checked as in :func:`txstate_spark.configure` (before the jar is
    looked up).

    Raises:
        TxStateSettingError: an option name or value is invalid.
        TxStateJarNotFoundError: the jar cannot be found (see :func:`txstate_spark.jar_path`).
        TxStateUnsupportedSparkError: no jar for that Spark line.
    """
    settings = spark_settings(options, ttl_by_operator)
    return submit_flags(jar_path(spark, scala), {PLUGINS_KEY: with_plugin(plugins), **settings})


def submit_flags(jar: str, settings: Mapping[str, str]) -> List[str]:
    """``--jars <jar>`` and one ``--conf KEY=VALUE`` per setting."""
    args = ["--jars", jar]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    return args
