"""What the driver-side tools (``migrate``, ``inspect``, ``verify``) share to call their JVM entry point:
finding the class in the driver JVM of a classic session, and polling its progress while a call runs."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Type

from txstate_spark.errors import TxStateError

#: Called with the JVM's progress (a JSON object) each time it changes.
ProgressCallback = Callable[[Dict[str, Any]], None]


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
