"""The command line's txstate settings, checked while argparse reads them.

``-o NAME=VALUE`` and ``--ttl-operator ID=DURATION`` (submit-args) and ``--conf KEY=VALUE``
(migrate, serve) are argparse types: a wrong name or value stops the command at once with exit
status 2 and a message naming the setting, the value and a valid example.
"""

from __future__ import annotations

import argparse
from typing import Callable, Tuple, TypeVar

from txstate_spark.errors import TxStateSettingError
from txstate_spark.settings.values import checked_spark_conf, operator_ttl_settings, setting_value

T = TypeVar("T")


def option(text: str) -> Tuple[str, str]:
    """``-o NAME=VALUE``: a txstate option by its short name, snake_case or camelCase."""
    name, value = _pair(text, "NAME=VALUE (e.g. block_cache_size_mb=64)")
    _check(lambda: setting_value(name, value))
    return name, value


def operator_ttl(text: str) -> Tuple[str, str]:
    """``--ttl-operator ID=DURATION``: the state TTL of one operator."""
    operator, ttl = _pair(text, "ID=DURATION (e.g. 0=30min)")
    _check(lambda: operator_ttl_settings({operator: ttl}, "--ttl-operator"))
    return operator, ttl


def spark_conf(text: str) -> Tuple[str, str]:
    """``--conf KEY=VALUE``: any Spark setting; a txstate one is checked and spelled as the jar spells it."""
    pair = _pair(text, "KEY=VALUE (e.g. spark.driver.memory=8g)")
    return _check(lambda: checked_spark_conf([pair])[0])


def _pair(text: str, form: str) -> Tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected {form}, got {text!r}")
    return name.strip(), value


def _check(check: Callable[[], T]) -> T:
    """``check()``'s result; a wrong setting becomes argparse's error (exit 2, the message on stderr)."""
    try:
        return check()
    except TxStateSettingError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
