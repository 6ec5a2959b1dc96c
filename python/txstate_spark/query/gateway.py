"""The py4j calls to the JVM's ``txstate.spark.query.PythonQueryGateway`` (docs/query-protocol.md).

Each call sends and receives one JSON string. A ``Py4JJavaError`` (which pyspark usually converts to
one of its ``CapturedException`` classes) whose Java message carries a
``[TXSTATE_...]`` error class becomes a :class:`StateQueryError` with that message (the Java stack
trace is dropped); anything else is a bug and propagates as it is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from txstate_spark.errors import StateQueryError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GATEWAY_CLASS = "txstate.spark.query.PythonQueryGateway"
_ERROR_MARK = "[TXSTATE_"


class QueryGateway:
    """The driver JVM's query gateway, reached through a classic (py4j) SparkSession."""

    def __init__(self, spark: "SparkSession") -> None:
        _refuse_spark_connect(spark)
        jvm = getattr(spark, "_jvm", None)
        jsession = getattr(spark, "_jsparkSession", None)
        if jvm is None or jsession is None:
            raise StateQueryError(
                f"interactive queries need a classic (py4j) pyspark SparkSession, got "
                f"{type(spark).__module__}.{type(spark).__qualname__}"
            )
        self._gateway = _gateway_class(jvm)
        self._jsession = jsession

    def query_target(self, jsq: Any) -> Dict[str, Any]:
        """``{"checkpoint", "runId", "isActive"}`` of a JVM StreamingQuery."""
        return self._call("queryTarget", jsq)

    def describe(self, target: Dict[str, Any]) -> Dict[str, Any]:
        """The store description for ``{"checkpoint", "runId", "operator", "store"}``."""
        return self._call("describe", self._jsession, json.dumps(target))

    def execute(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """The response to one request."""
        return self._call("execute", self._jsession, json.dumps(request, allow_nan=False))

    def _call(self, method: str, *args: Any) -> Dict[str, Any]:
        try:
            answer = getattr(self._gateway, method)(*args)
        except Exception as error:  # Py4JJavaError, or pyspark's conversion of it (CapturedException)
            message = txstate_error_message(error)
            if message is None:
                raise
            raise StateQueryError(message) from None
        parsed: Dict[str, Any] = json.loads(answer)
        return parsed


# The gateway class per driver JVM view: each attribute step of jvm.a.b.C is a py4j round trip.
_GATEWAY_CLASSES: Dict[int, Tuple[Any, Any]] = {}


def _gateway_class(jvm: Any) -> Any:
    cached = _GATEWAY_CLASSES.get(id(jvm))
    if cached is not None and cached[0] is jvm:
        return cached[1]
    from py4j.java_gateway import JavaClass, JavaObject  # type: ignore[import-untyped]

    gateway = jvm
    for part in GATEWAY_CLASS.split("."):
        gateway = getattr(gateway, part)
    if not isinstance(gateway, (JavaClass, JavaObject)):
        raise StateQueryError(
            f"the driver JVM has no {GATEWAY_CLASS}: the txstate-spark jar on its classpath is "
            f"missing or predates interactive queries. Start the session with the current jar "
            f"(txstate_spark.configure(SparkSession.builder) or spark-submit --jars <jar>)."
        )
    _GATEWAY_CLASSES.clear()  # one driver JVM per Python process: keep only the current one
    _GATEWAY_CLASSES[id(jvm)] = (jvm, gateway)
    return gateway


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


def _refuse_spark_connect(spark: Any) -> None:
    module = type(spark).__module__
    remote = module.startswith("pyspark.sql.connect")
    if not remote:
        try:
            from pyspark.sql.utils import is_remote

            remote = bool(is_remote()) and getattr(spark, "_jvm", None) is None
        except ImportError:
            pass
    if remote:
        raise StateQueryError(
            "interactive queries are not supported under Spark Connect: they call the driver JVM "
            "through py4j, which a Spark Connect client does not have. Run them from a classic "
            "pyspark session on the driver (the process that runs the streaming query)."
        )
