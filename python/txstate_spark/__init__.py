"""txstate-spark: a transactional RocksDB state store for Spark Structured Streaming.

The state store itself is a JVM plugin (``txstate.spark.TxStateStoreProvider``, in the jar this
wheel bundles). This package only finds that jar and wires it into Spark:

* :func:`configure` - a ``SparkSession.Builder`` helper (classic PySpark, before the first session);
* :func:`submit_args` - ``spark-submit`` / ``pyspark`` flags (also ``python -m txstate_spark submit-args``);
* :func:`migrate` - move a stopped query's state to another provider (also ``python -m txstate_spark migrate``);
* :func:`inspect` / :func:`verify` - what a checkpoint holds, and whether every file of it is sound
  (also ``python -m txstate_spark inspect|verify``); both only read;
* :func:`follow` - a read-only follower of a running query's state, kept current from its checkpoint
  (served over HTTP by ``python -m txstate_spark serve``);
* :func:`jar_path` - the jar itself (``python -m txstate_spark jar``), e.g. for a cluster library;
  one jar per Spark line, picked for the Spark that will run (:func:`supported_lines`).

Importing this package does not import pyspark.

The modules here are the public API and what it stands on (``jar``, ``session``, ``submit``,
``migration``, ``inspection``, ``verification``, ``errors``, ``constants``); the rooms are
``txstate_spark.query`` (the query client and followers), ``txstate_spark.settings`` (the settings'
specification, names and values), ``txstate_spark.cli`` (``python -m txstate_spark``) and
``txstate_spark.jvm_gateway`` (how migrate, inspect and verify reach the driver JVM).
"""

from txstate_spark._version import __version__
from txstate_spark.constants import PLUGIN_CLASS, PROVIDER_CLASS, PROVIDER_CLASS_KEY, SETTINGS_PREFIX
from txstate_spark.errors import (
    TxStateCheckpointError,
    TxStateConfigurationError,
    TxStateError,
    TxStateJarNotFoundError,
    TxStateMigrationError,
    TxStateSettingError,
    TxStateUnsupportedSparkError,
)
from txstate_spark.inspection import CheckpointInspection, inspect
from txstate_spark.jar import jar_path, supported_lines
from txstate_spark.migration import MigrationReport, migrate
from txstate_spark.query.follower import Follower, FollowerLag, follow
from txstate_spark.session import configure
from txstate_spark.settings.names import KNOWN_SETTINGS, setting_key
from txstate_spark.settings.values import spark_settings
from txstate_spark.submit import submit_args
from txstate_spark.verification import Verification, verify

__all__ = [
    "KNOWN_SETTINGS",
    "PLUGIN_CLASS",
    "PROVIDER_CLASS",
    "PROVIDER_CLASS_KEY",
    "SETTINGS_PREFIX",
    "CheckpointInspection",
    "TxStateCheckpointError",
    "TxStateConfigurationError",
    "TxStateError",
    "Follower",
    "FollowerLag",
    "MigrationReport",
    "TxStateJarNotFoundError",
    "TxStateMigrationError",
    "TxStateSettingError",
    "TxStateUnsupportedSparkError",
    "__version__",
    "configure",
    "follow",
    "inspect",
    "jar_path",
    "migrate",
    "setting_key",
    "spark_settings",
    "submit_args",
    "supported_lines",
    "Verification",
    "verify",
]
