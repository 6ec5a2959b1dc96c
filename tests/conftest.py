"""Shared fixtures for the real-Spark tests (the unit tests under unit/ use none of them).

Layout: test_*.py are the tests; harness/ is what they share, jobs/ the scripts they run in
processes of their own, servers/ the HDFS, S3 and Spark Connect servers they start, soak/ the soak,
fixtures/ checkpoints of older releases. This file puts tests/ on sys.path, so those folders import
as packages (`from harness import streaming_harness`) however pytest roots.

Environment:
  TXSTATE_SPARK_JAR
      The txstate-spark jar put on the session's classpath (`spark.jars`). The Makefile exports
      it; without it the tests use target/txstate-spark-<pyspark's line>_2.13-<VERSION>.jar. A missing jar fails the
      tests: build it with `make jar` (or `build/sbt package`).
  TXSTATE_TEST_CANDIDATE_PROVIDER
      The state store provider class the tests check against Spark's HDFS provider. Default:
      txstate.spark.TxStateStoreProvider. Tests never skip when that class is missing from the
      jar: the queries fail with ClassNotFoundException and so do the tests. To check the harness
      itself, point it at Spark's own RocksDB provider:
        TXSTATE_TEST_CANDIDATE_PROVIDER=org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider

The provider is chosen per query: `spark.sql.streaming.stateStore.providerClass` is read when a
query starts from a fresh checkpoint (and taken from the checkpoint's offset log on a restart), so
one local session serves every provider; see harness.streaming_harness.run_case.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # the packages above import from here (see the docstring)
    sys.path.insert(0, str(TESTS_DIR))

from harness import streaming_harness  # noqa: E402


@pytest.fixture(scope="session")
def plugin_jar() -> Path:
    """The txstate-spark jar under test (fails, never skips, when it is missing)."""
    try:
        return streaming_harness.plugin_jar()
    except FileNotFoundError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def candidate_provider() -> str:
    """The provider class compared with Spark's HDFS provider."""
    return streaming_harness.candidate_provider()


@pytest.fixture(scope="session")
def spark(plugin_jar: Path):
    """A small local[2] session with the txstate jar, shared by every test of the session."""
    # Python workers (applyInPandasWithState) must run this interpreter, which has pandas/pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("txstate-spark-tests")
    for key, value in streaming_harness.spark_settings(plugin_jar).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.memory", "2g")
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    # Stop any query a failed test left running before the session goes.
    for query in session.streams.active:
        try:
            query.stop()
        except Exception:
            pass
    session.stop()


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """A fresh directory for one test's input files and checkpoints."""
    return tmp_path
