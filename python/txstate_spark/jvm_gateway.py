"""How the driver-side tools (``migrate``, ``inspect``, ``verify``) reach their JVM entry points over py4j.

Finding a gateway class in the driver JVM of a classic session, polling its progress while a call
runs, turning a ``[TXSTATE_...]`` JVM error into its message, and calling
``txstate.operate.OperateGateway`` (``inspect`` and ``verify``). Both of those only read: the JVM
opens every checkpoint file through a read-only Hadoop file system view. The query client's calls
(``txstate.query.ProtocolCalls``, over py4j or Spark Connect) are :mod:`txstate_spark.query.gateway`.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Type

from txstate_spark.errors import TxStateCheckpointError, TxStateError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Called with the JVM's progress (a JSON object) each time it changes.
ProgressCallback = Callable[[Dict[str, Any]], None]

OPERATE_GATEWAY_CLASS = "txstate.operate.OperateGateway"

# Progress callbacks of inspect and verify get the JVM's phase, current, done, total, files and elapsedMs.

#: Quiet, local and self-contained: the session exists only to reach the JVM and Hadoop's file systems.
LOCAL_SESSION_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}

_ERROR_MARK = "[TXSTATE_"


def driver_class(spark: Any, class_name: str, tool: str, without_session: str,
                 error: Type[TxStateError] = TxStateError) -> Any:
    """``class_name`` in the driver JVM of ``spark``; ``error`` names ``tool`` and what to do when there is none.

    ``without_session`` says how to run ``tool`` without a classic session (Spark Connect has no JVM here)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None or getattr(spark, "_jsparkSession", None) is None:
        raise error(f"{tool} needs a classic (py4j) pyspark SparkSession on the driver, not Spark Connect; "
                    f"{without_session}")
    found = jvm
    for part in class_name.split("."):
        found = getattr(found, part)
    from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]

    if not isinstance(found, JavaClass):
        raise error(
            f"the driver JVM has no {class_name}: the txstate-spark jar on its classpath is missing or "
            f"older than {tool}. Start the session with txstate_spark.configure(SparkSession.builder)."
        )
    return found


def poll_progress(gateway: Any, callback: ProgressCallback, stop: threading.Event) -> None:
    """Calls ``callback`` with ``gateway.progress()`` whenever it changes, until ``stop`` is set."""
    last = None
    while not stop.wait(0.2):
        try:
            current = gateway.progress()
        except Exception:  # the gateway went away: the main call reports why
            return
        if current != last:
            last = current
            callback(json.loads(current))


@contextmanager
def progress_polled(gateway: Any, callback: Optional[ProgressCallback]) -> Iterator[None]:
    """While the block runs (a call into ``gateway``), its progress goes to ``callback``, if there is one."""
    if callback is None:
        yield
        return
    stop = threading.Event()
    poller = threading.Thread(target=poll_progress, args=(gateway, callback, stop), daemon=True)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join(timeout=5)


def txstate_error_message(error: Any) -> Optional[str]:
    """The ``[TXSTATE_...]`` message of a Py4JJavaError or of pyspark's ``CapturedException`` wrapping
    one (or of one of its Java causes), else None."""
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    seen = 0
    while throwable is not None and seen < 10:
        try:
            message = throwable.getMessage()
        except Exception:  # a dead gateway: fall back to the Python-side text
            break
        if message and _ERROR_MARK in str(message):
            text = str(message)
            return text[text.index(_ERROR_MARK):].strip()
        throwable = throwable.getCause()
        seen += 1
    text = str(error)
    if _ERROR_MARK in text:
        text = text[text.index(_ERROR_MARK):]
        # str(Py4JJavaError) ends with the Java stack trace: keep the message lines only.
        lines = []
        for line in text.splitlines():
            if line.lstrip().startswith("at ") or line.startswith("Caused by:"):
                break
            lines.append(line)
        return "\n".join(lines).strip()
    return None


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


def call_operate(spark: "SparkSession", method: str, options: Dict[str, Any],
                 progress: Optional[ProgressCallback]) -> str:
    """Runs ``OperateGateway.<method>(session, options)``; polls its progress into ``progress``."""
    gateway = driver_class(spark, OPERATE_GATEWAY_CLASS, "inspect and verify",
                           "pass spark=None (a local session is started), or run "
                           "`python -m txstate_spark inspect CHECKPOINT`")
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
