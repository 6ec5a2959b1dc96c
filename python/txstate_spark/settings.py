"""Turning keyword options into Spark settings (``spark.sql.streaming.stateStore.txstate.*``)."""

import os
import re
from typing import Dict, Mapping, Tuple

from txstate_spark.constants import PROVIDER_CLASS, PROVIDER_CLASS_KEY, SETTINGS_PREFIX
from txstate_spark.errors import TxStateConfigurationError

#: Every setting the JVM side defines (``TxStateConf.settings`` in the jar, which rejects any other
#: key under the prefix). tests/test_packaging.py compares this list with the jar's. The one
#: setting per operator, ``ttl.operator.<id>``, is no option name: set it as a Spark conf.
KNOWN_SETTINGS: Tuple[str, ...] = (
    "localDir",
    "snapshotInterval",
    "maxUncommittedRecords",
    "maxUncommittedBytes",
    "blockCacheSizeMB",
    "hotCacheSizeMB",
    "maxNativeMemoryMB",
    "writeBufferSizeMB",
    "maxWriteBufferNumber",
    "ttl",
)

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*")
_BY_FOLDED_NAME = {name.lower(): name for name in KNOWN_SETTINGS}


def setting_key(name: str) -> str:
    """Return the full Spark setting for an option name.

    ``block_cache_size_mb`` and ``blockCacheSizeMB`` both give
    ``spark.sql.streaming.stateStore.txstate.blockCacheSizeMB``; a name that already carries the
    prefix is accepted as is. Names are matched against the settings the jar defines, so a typo
    fails here rather than when the first streaming query starts.

    Raises:
        TxStateConfigurationError: the name is not snake_case/camelCase, or names no txstate setting.
    """
    short = name[len(SETTINGS_PREFIX):] if name.startswith(SETTINGS_PREFIX) else name
    if not _NAME.fullmatch(short):
        raise TxStateConfigurationError(
            f"Invalid txstate option name {name!r}: expected a snake_case or camelCase name such as "
            f"'block_cache_size_mb' or 'blockCacheSizeMB' (it becomes {SETTINGS_PREFIX}<name>)."
        )
    known = _BY_FOLDED_NAME.get(short.replace("_", "").lower())
    if known is None:
        raise TxStateConfigurationError(
            f"Unknown txstate option {name!r}. The txstate settings are: "
            f"{', '.join(KNOWN_SETTINGS)} (snake_case works too, e.g. 'local_dir'); each becomes "
            f"{SETTINGS_PREFIX}<name>."
        )
    return SETTINGS_PREFIX + known


def setting_value(name: str, value: object) -> str:
    """Return the string Spark expects for an option value (booleans become ``true``/``false``).

    Raises:
        TxStateConfigurationError: the value is ``None``.
    """
    if value is None:
        raise TxStateConfigurationError(
            f"txstate option {name!r} is None: pass a value, or leave the option out to use its default."
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fsdecode(os.fspath(value))
    return str(value)


def spark_settings(options: Mapping[str, object]) -> Dict[str, str]:
    """Return the provider class setting plus one ``spark.sql.streaming.stateStore.txstate.*`` per option.

    Raises:
        TxStateConfigurationError: an option name is invalid or unknown, a value is ``None``, or two
            names map to the same setting.
    """
    result: Dict[str, str] = {PROVIDER_CLASS_KEY: PROVIDER_CLASS}
    origin: Dict[str, str] = {}
    for name, value in options.items():
        key = setting_key(name)
        if key in origin:
            raise TxStateConfigurationError(
                f"txstate options {origin[key]!r} and {name!r} both set {key}: pass only one of them."
            )
        origin[key] = name
        result[key] = setting_value(name, value)
    return result
