"""The JVM side of ``inspect`` and ``verify`` (``txstate.operate.OperateGateway``), reached over py4j.

Both only read: the JVM opens every checkpoint file through a read-only Hadoop file system view.
Called with ``spark=None``, a local session with the txstate jar is started for the call and stopped
after it (an active session is used as it is).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional
from contextlib import contextmanager

from txstate_spark.errors import TxStateCheckpointError, TxStateError
from txstate_spark.jvm_calls import ProgressCallback, driver_class, progress_polled
from txstate_spark.query.gateway import txstate_error_message

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GATEWAY_CLASS = "txstate.operate.OperateGateway"

# Progress callbacks get the JVM's phase, current, done, total, files and elapsedMs as they change.

# Quiet, local and self-contained: the session exists only to reach the JVM and Hadoop's file systems.
LOCAL_SESSION_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


@contextmanager
def session_for(spark: Optional["SparkSession"], conf: Optional[Dict[str, str]] = None) -> Iterator["SparkSession"]:
    """``spark`` itself, else the active session, else a local one with the jar (stopped on exit)."""
    if spark is not None:
        yield spark
        return
    from pyspark.sql import SparkSession

    from txstate_spark.session import configure

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    builder = SparkSession.builder.master("local[1]").appName("txstate-operate")
    for key, value in {**LOCAL_SESSION_SETTINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def call(spark: "SparkSession", method: str, options: Dict[str, Any], progress: Optional[ProgressCallback]) -> str:
    """Runs ``OperateGateway.<method>(session, options)``; polls its progress into ``progress``."""
    gateway = _gateway(spark)
    try:
        with progress_polled(gateway, progress):
            return str(getattr(gateway, method)(spark._jsparkSession, json.dumps(options)))
    except Exception as error:  # Py4JJavaError or pyspark's CapturedException
        message = txstate_error_message(error)
        if message is None:
            raise
        if message.startswith("[TXSTATE_OPERATE_"):
            raise TxStateCheckpointError(message) from None
        raise TxStateError(message) from None


def _gateway(spark: Any) -> Any:
    return driver_class(spark, GATEWAY_CLASS, "inspect and verify",
                        "pass spark=None (a local session is started), or run `python -m txstate_spark inspect CHECKPOINT`")
