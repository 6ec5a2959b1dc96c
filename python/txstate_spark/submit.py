"""Command-line flags for ``spark-submit`` / ``pyspark`` that install the provider."""

from typing import List, Optional

from txstate_spark.jar import jar_path
from txstate_spark.settings import spark_settings


def submit_args(spark: Optional[str] = None, **options: object) -> List[str]:
    """Return ``spark-submit`` flags that load the jar and select the txstate provider.

    Example: ``["--jars", "/…/txstate-spark-4.1_2.13-0.2.0.jar", "--conf",
    "spark.sql.streaming.stateStore.providerClass=txstate.spark.TxStateStoreProvider", ...]``.
    ``spark`` picks the jar's Spark line (see :func:`txstate_spark.jar_path`). Keyword options
    are txstate settings, named as in :func:`txstate_spark.configure`.

    Raises:
        TxStateJarNotFoundError: the jar cannot be found (see :func:`txstate_spark.jar_path`).
        TxStateUnsupportedSparkError: no jar for that Spark line.
        TxStateConfigurationError: an option name or value is invalid.
    """
    args = ["--jars", jar_path(spark)]
    for key, value in spark_settings(options).items():
        args += ["--conf", f"{key}={value}"]
    return args
