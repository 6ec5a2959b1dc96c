"""``configure()``: install the provider on a classic (py4j) ``SparkSession.Builder``."""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, TypeVar, Union

from txstate_spark.constants import PLUGINS_KEY, PROVIDER_CLASS, PROVIDER_CLASS_KEY
from txstate_spark.errors import TxStateConfigurationError
from txstate_spark.jar import jar_path
from txstate_spark.plugins import with_plugin
from txstate_spark.settings.values import Count, Duration, Size, spark_settings
from txstate_spark.submit import submit_flags

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    BuilderT = TypeVar("BuilderT", bound=SparkSession.Builder)
else:
    BuilderT = TypeVar("BuilderT")


def configure(
    builder: BuilderT,
    *,
    local_dir: Optional[Union[str, os.PathLike[str]]] = None,
    snapshot_interval: Optional[Count] = None,
    max_uncommitted_records: Optional[Count] = None,
    max_uncommitted_bytes: Optional[Size] = None,
    block_cache_size_mb: Optional[Size] = None,
    hot_cache_size_mb: Optional[Size] = None,
    max_native_memory_mb: Optional[Size] = None,
    max_heap_memory_mb: Optional[Size] = None,
    write_buffer_size_mb: Optional[Size] = None,
    max_write_buffer_number: Optional[Count] = None,
    ttl: Optional[Duration] = None,
    ttl_by_operator: Optional[Mapping[int, Duration]] = None,
    **options: object,
) -> BuilderT:
    """Make a ``SparkSession.Builder`` load the txstate-spark jar and use its state store provider.

    Appends the jar to ``spark.jars`` (jars already set on the builder are kept), appends
    ``txstate.spark.TxStatePlugin`` (the executor metrics) to ``spark.plugins`` (plugins already set
    on the builder are kept), sets
    ``spark.sql.streaming.stateStore.providerClass`` to ``txstate.spark.TxStateStoreProvider`` and
    sets each txstate option given as ``spark.sql.streaming.stateStore.txstate.<camelCaseName>``.
    Call it before the first ``getOrCreate()`` of the Python process::

        spark = configure(SparkSession.builder.master("local[2]"), local_dir="/mnt/state").getOrCreate()

    Every value is checked first, as the jar checks it, before the jar is looked up or a JVM
    starts. A value left at None keeps the setting's default. Sizes take ``k``/``m``/``g``/``t`` units
    (``64m``, ``64MB``, ``1g``), durations ``ms``/``s``/``m`` or ``min``/``h``/``d`` (``30min``, ``7d``)
    or a ``timedelta``.

    Args:
        builder: a classic (py4j) ``SparkSession.Builder``.
        local_dir: a stable directory for the local RocksDB copies, reused after a restart
            (default: a fresh one under the executor's SparkFiles root).
        snapshot_interval: versions between snapshots uploaded to the checkpoint, >= 1
            (default: ``spark.sql.streaming.stateStore.minDeltasForSnapshot``).
        max_uncommitted_records: uncommitted entries per store before an early commit; -1: no limit (default).
        max_uncommitted_bytes: uncommitted bytes per store before an early commit (``64m``, the
            default, or a number of bytes); -1: no limit.
        block_cache_size_mb: RocksDB block cache per store instance, MiB (``64``) or a size (``1g``), only with
            ``max_native_memory_mb=0``; default 8.
        hot_cache_size_mb: heap cache of hot values per executor JVM, MiB or a size; 0: off, the default
            (it pays only on skewed keys over long runs).
        max_native_memory_mb: RocksDB native memory (block cache and memtables) per executor JVM, shared
            by its stores, MiB or a size; 0: each store sized on its own; default 256.
        max_heap_memory_mb: heap per executor JVM for the hot-state cache, kept undo and running buffers,
            MiB or a size; past it the oldest kept undo goes (a re-run of that batch reloads); 0: no
            limit; default ``hot_cache_size_mb`` plus a tenth of the executor's maximum heap.
        write_buffer_size_mb: RocksDB memtable size per store instance, MiB or a size; default 64.
        max_write_buffer_number: RocksDB memtables per store instance, >= 2; default 2.
        ttl: state TTL of every stateful operator (``"7d"``, ``timedelta(days=7)``); default off.
        ttl_by_operator: state TTL per operator id (its folder under the checkpoint's ``state/``),
            e.g. ``{0: "30min", 2: "off"}``; overrides ``ttl`` for those operators.
        **options: the same settings by other names: camelCase (``blockCacheSizeMB=64``) or in
            full (``**{"spark.sql.streaming.stateStore.txstate.localDir": "/mnt/state"}``).

    Returns:
        The same builder, for chaining.

    Raises:
        TxStateSettingError: an option's name or value is wrong (the message names the setting,
            the value and a valid example, or the closest known name).
        TxStateConfigurationError: under Spark Connect; or the driver JVM of this process is already
            running without the jar (a live SparkContext, or one started and stopped earlier), so
            ``spark.jars`` can no longer take effect.
        TxStateJarNotFoundError: the jar cannot be found (see :func:`txstate_spark.jar_path`).
        TxStateUnsupportedSparkError: no jar for the Spark that will run ($SPARK_HOME's, else pyspark's).
    """
    named = {
        "local_dir": local_dir,
        "snapshot_interval": snapshot_interval,
        "max_uncommitted_records": max_uncommitted_records,
        "max_uncommitted_bytes": max_uncommitted_bytes,
        "block_cache_size_mb": block_cache_size_mb,
        "hot_cache_size_mb": hot_cache_size_mb,
        "max_native_memory_mb": max_native_memory_mb,
        "max_heap_memory_mb": max_heap_memory_mb,
        "write_buffer_size_mb": write_buffer_size_mb,
        "max_write_buffer_number": max_write_buffer_number,
        "ttl": ttl,
    }
    settings = spark_settings({**{k: v for k, v in named.items() if v is not None}, **options}, ttl_by_operator)
    builder_options = _builder_options(builder)
    connect_reason = _spark_connect_reason(builder, builder_options)
    if connect_reason is not None:
        raise TxStateConfigurationError(_spark_connect_message(connect_reason, settings))
    jar = jar_path()
    jvm = _running_driver_jvm()
    if jvm is None:
        builder.config("spark.jars", ",".join(_with_jar(builder_options.get("spark.jars"), jar)))
    elif not _jvm_has_provider(jvm, jar):
        raise TxStateConfigurationError(_too_late_message(jar, settings))
    # else: the running JVM loaded the jar at launch (spark-submit --jars, or an earlier configure());
    # its spark.jars is already in effect and the builder inherits it.
    builder.config(PLUGINS_KEY, with_plugin(builder_options.get(PLUGINS_KEY)))
    for key, value in settings.items():
        builder.config(key, value)
    return builder


def _builder_options(builder: Any) -> Dict[str, Any]:
    options = getattr(builder, "_options", None)
    if not isinstance(options, dict) or not callable(getattr(builder, "config", None)):
        raise TxStateConfigurationError(
            f"configure() expects a pyspark SparkSession.Builder (e.g. SparkSession.builder), "
            f"got {type(builder).__module__}.{type(builder).__qualname__}."
        )
    return options


def _spark_connect_reason(builder: Any, options: Dict[str, Any]) -> Optional[str]:
    """Say why this builder would make a Spark Connect session, or return None for classic Spark."""
    if type(builder).__module__.startswith("pyspark.sql.connect"):
        return "the builder is a Spark Connect builder"
    if "spark.remote" in options:
        return f"the builder sets spark.remote={options['spark.remote']}"
    if os.environ.get("SPARK_REMOTE"):
        return f"SPARK_REMOTE={os.environ['SPARK_REMOTE']} is set"
    api_mode = str(options.get("spark.api.mode", os.environ.get("SPARK_API_MODE", ""))).lower()
    if api_mode not in ("classic", "connect"):
        try:
            from pyspark.util import default_api_mode
        except ImportError:  # older pyspark: classic unless told otherwise
            api_mode = "classic"
        else:
            api_mode = default_api_mode()
    if api_mode == "connect":
        return "spark.api.mode is 'connect'"
    from pyspark.sql.utils import is_remote

    if is_remote():
        return "this Python process already runs Spark Connect (pyspark.sql.utils.is_remote() is True)"
    return None


def _running_driver_jvm() -> Any:
    """Return the py4j view of this process's driver JVM, or None when it has not been launched yet."""
    from pyspark import SparkContext

    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" in os.environ:
        # Started by spark-submit: the driver JVM exists already, with the classpath it was given.
        SparkContext._ensure_initialized()
    return SparkContext._jvm


def _jvm_has_provider(jvm: Any, jar: str) -> bool:
    """Whether the running driver JVM was launched with this jar or can already load the provider."""
    launched_with = str(jvm.java.lang.System.getProperty("spark.jars") or "")
    if any(_same_file(entry, jar) for entry in launched_with.split(",")):
        return True
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(PROVIDER_CLASS, False, loader)
    except Py4JJavaError:
        return False
    return True


def _with_jar(jars: Optional[str], jar: str) -> List[str]:
    """The comma-separated ``spark.jars`` list with ``jar`` appended unless it is already there."""
    entries = [entry.strip() for entry in (jars or "").split(",") if entry.strip()]
    if not any(_same_file(entry, jar) for entry in entries):
        entries.append(jar)
    return entries


def _same_file(entry: str, jar: str) -> bool:
    entry = entry.strip()
    if entry.startswith("file:"):
        entry = entry[len("file:"):]
        while entry.startswith("//"):
            entry = entry[1:]
    return bool(entry) and os.path.realpath(entry) == os.path.realpath(jar)


def _too_late_message(jar: str, settings: Dict[str, str]) -> str:
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        what = "A SparkContext is already running in this Python process"
    else:
        what = "The Spark driver JVM of this Python process was already started (by an earlier session)"
    return (
        f"{what}, without the txstate-spark jar, so spark.jars can no longer take effect: the "
        f"driver's classpath is fixed when its JVM starts, and spark.stop() does not restart it. "
        f"Either stop the session (spark.stop()), start a new Python process and call "
        f"txstate_spark.configure(SparkSession.builder) before its first getOrCreate(); or start "
        f"Python/spark-submit with these flags (`python -m txstate_spark submit-args` prints them; for "
        f"the pyspark shell put them in PYSPARK_SUBMIT_ARGS before 'pyspark-shell'):\n  {shlex.join(submit_flags(jar, {PLUGINS_KEY: with_plugin(None), **settings}))}"
    )


def _spark_connect_message(reason: str, settings: Dict[str, str]) -> str:
    return (
        f"txstate-spark cannot install its state store provider from a Spark Connect client "
        f"({reason}): the provider runs inside the Spark server's JVM, and a Connect client has no "
        f"py4j access to it and cannot add jars to it. Install the jar on the server instead: as a "
        f"cluster library (on Databricks), or start the Connect server with "
        f"`--jars <jar> --conf {PROVIDER_CLASS_KEY}={PROVIDER_CLASS}` "
        f"(`python -m txstate_spark submit-args` prints the exact flags"
        f"{' with your options' if len(settings) > 1 else ''}). Once the jar is on the server, the provider "
        f"and txstate settings are ordinary SQL settings: spark.conf.set('{PROVIDER_CLASS_KEY}', "
        f"'{PROVIDER_CLASS}')."
    )
