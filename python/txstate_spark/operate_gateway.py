"""The JVM side of ``inspect`` and ``verify`` (``txstate.operate.OperateGateway``), reached over py4j.

Both only read: the JVM opens every checkpoint file through a read-only Hadoop file system view.
Called with ``spark=None``, a local session with the txstate jar is started for the call and stopped
after it (an active session is used as it is).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional
from contextlib import contextmanager

from txstate_spark.errors import TxStateCheckpointError, TxStateError
from txstate_spark.query.gateway import txstate_error_message

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GATEWAY_CLASS = "txstate.operate.OperateGateway"

#: Called with the JVM's progress (phase, current, done, total, files, elapsedMs) whenever it changes.
ProgressCallback = Callable[[Dict[str, Any]], None]

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
    stop = threading.Event()
    poller = None
    if progress is not None:
        poller = threading.Thread(target=poll_progress, args=(gateway, progress, stop), daemon=True)
        poller.start()
    try:
        return str(getattr(gateway, method)(spark._jsparkSession, json.dumps(options)))
    except Exception as error:  # Py4JJavaError or pyspark's CapturedException
        message = txstate_error_message(error)
        if message is None:
            raise
        if message.startswith("[TXSTATE_OPERATE_"):
            raise TxStateCheckpointError(message) from None
        raise TxStateError(message) from None
    finally:
        stop.set()
        if poller is not None:
            poller.join(timeout=5)


def poll_progress(gateway: Any, callback: ProgressCallback, stop: threading.Event) -> None:
    """Calls ``callback`` with ``gateway.progress()`` (JSON) whenever it changes, until ``stop`` is set.
    Any gateway with a ``progress()`` call can use it (migrate's ``MigrationGateway`` has one too)."""
    last = None
    while not stop.wait(0.2):
        try:
            current = gateway.progress()
        except Exception:  # the gateway went away: the main call reports why
            return
        if current != last:
            last = current
            callback(json.loads(current))


def _gateway(spark: Any) -> Any:
    jvm = getattr(spark, "_jvm", None)
    if jvm is None or getattr(spark, "_jsparkSession", None) is None:
        raise TxStateError(
            "inspect and verify need a classic (py4j) pyspark SparkSession on the driver, not Spark Connect; "
            "pass spark=None (a local session is started), or run `python -m txstate_spark inspect CHECKPOINT`"
        )
    gateway = jvm
    for part in GATEWAY_CLASS.split("."):
        gateway = getattr(gateway, part)
    from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]

    if not isinstance(gateway, JavaClass):
        raise TxStateError(
            f"the driver JVM has no {GATEWAY_CLASS}: the txstate-spark jar on its classpath is missing or "
            "older than inspect and verify. Start the session with txstate_spark.configure(SparkSession.builder)."
        )
    return gateway
