"""The calls to the JVM's ``txstate.query.ProtocolCalls`` (docs/query-protocol.md).

Each call sends and receives one JSON string, over one of two transports:

* classic pyspark: one py4j call to the driver JVM (the fast path);
* Spark Connect: one read of the ``txstate`` data source with options ``protocol`` and ``request``,
  which the server answers with a single row holding the JVM's JSON response. The jar must be on
  the Connect server (``--jars``).

A JVM error whose message carries a ``[TXSTATE_...]`` error class becomes a :class:`StateQueryError`
with that message (the Java stack trace is dropped); anything else is a bug and propagates as it is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Tuple

from txstate_spark.errors import StateQueryError
from txstate_spark.jvm_gateway import txstate_error_message

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GATEWAY_CLASS = "txstate.query.ProtocolCalls"
SOURCE_FORMAT = "txstate"


def gateway_for(spark: "SparkSession") -> "QueryGateway":
    """The gateway of ``spark``: through the data source under Spark Connect, else through py4j."""
    if is_spark_connect(spark):
        return ConnectGateway(spark)
    return QueryGateway(spark)


class QueryGateway:
    """The driver JVM's query gateway, reached through a classic (py4j) SparkSession."""

    def __init__(self, spark: "SparkSession") -> None:
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

    def query_target_of_run(self, run_id: str) -> Dict[str, Any]:
        """``{"checkpoint", "runId", "isActive"}`` of the running query run ``run_id`` of the session."""
        return self._call("queryTargetOfRun", self._jsession, json.dumps({"runId": run_id}))

    def describe(self, target: Dict[str, Any]) -> Dict[str, Any]:
        """The store description for ``{"checkpoint", "runId", "operator", "store"}``."""
        return self._call("describe", self._jsession, json.dumps(target))

    def execute(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """The response to one request."""
        return self._call("execute", self._jsession, json.dumps(request, allow_nan=False))

    def follow(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Starts a follower; its store description with ``"follower"``, its id."""
        return self._call("follow", self._jsession, json.dumps(request))

    def follower_status(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """``{"lag": {...}, ...}`` of the follower ``{"follower"}``."""
        return self._call("followerStatus", json.dumps(request))

    def unfollow(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Closes the follower ``{"follower"}``."""
        return self._call("unfollow", json.dumps(request))

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


def is_spark_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no py4j: queries go through the data source)."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return True
    try:
        from pyspark.sql.utils import is_remote
    except ImportError:
        return False
    return bool(is_remote()) and getattr(spark, "_jvm", None) is None


class ConnectGateway(QueryGateway):
    """The same calls through the ``txstate`` data source, for Spark Connect sessions: one read,
    planned on the server, whose single row is the JVM's JSON response."""

    def __init__(self, spark: "SparkSession") -> None:  # no py4j to look up
        self._spark = spark

    def query_target(self, jsq: Any) -> Dict[str, Any]:
        raise StateQueryError("a classic StreamingQuery cannot be asked through a Spark Connect session")

    def query_target_of_run(self, run_id: str) -> Dict[str, Any]:
        return self._read("target", {"runId": run_id})

    def describe(self, target: Dict[str, Any]) -> Dict[str, Any]:
        return self._read("describe", target)

    def execute(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return self._read("execute", request)

    def follow(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return self._read("follow", request)

    def follower_status(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return self._read("followerStatus", request)

    def unfollow(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return self._read("unfollow", request)

    def _read(self, call: str, request: Dict[str, Any]) -> Dict[str, Any]:
        reader = self._spark.read.format(SOURCE_FORMAT).option("protocol", call)
        try:
            rows = reader.option("request", json.dumps(request, allow_nan=False)).load().collect()
        except Exception as error:  # pyspark's errors carry the server's message
            message = txstate_error_message(error)
            if message is not None:
                raise StateQueryError(message) from None
            if "DATA_SOURCE_NOT_FOUND" in str(error) or "Failed to find the data source" in str(error):
                raise StateQueryError(
                    "the Spark Connect server has no txstate data source: start it with the "
                    "txstate-spark jar (start-connect-server.sh --jars <jar>; `python -m txstate_spark "
                    "jar` prints its path)"
                ) from None
            raise
        parsed: Dict[str, Any] = json.loads(rows[0][0])
        return parsed
