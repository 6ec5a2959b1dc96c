"""Turning options into Spark settings (``spark.sql.streaming.stateStore.txstate.*``), checked as the jar checks them.

Names and values follow the specification the jar reads too (``settings.json``, see
:mod:`txstate_spark.settings.spec`), so a bad value fails here, naming the setting, the value and a
valid example, rather than in an executor task of the first streaming query.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from txstate_spark.constants import PROVIDER_CLASS, PROVIDER_CLASS_KEY, SETTINGS_PREFIX
from txstate_spark.errors import TxStateSettingError
from txstate_spark.settings.names import OPERATOR_TTL_PREFIX, setting_key
from txstate_spark.settings.spec import OPERATOR_TTL, SETTINGS, Setting, duration_text

#: A whole number: an int, or its text (``-1`` where it means no limit).
Count = Union[int, str]
#: A size: an int (bytes, or MiB for the ``*_size_mb`` settings) or text with a unit (``64m``, ``64MB``, ``1g``).
Size = Union[int, str]
#: A duration: text with a unit (``500ms``, ``30s``, ``30min``, ``2h``, ``7d``), ``off``, or a ``timedelta``.
Duration = Union[str, timedelta]

_OPERATOR_ID = re.compile(r"[0-9]+")


def setting_value(name: str, value: object) -> str:
    """Return the text Spark is given for an option's value, after checking it as the jar will.

    Numbers may be ints or text (``64m``, ``1g``; see the settings' kinds), durations text or a
    ``datetime.timedelta``, ``local_dir`` a str or path; the text is passed on as written.

    Raises:
        TxStateSettingError: the name is unknown, or the value is ``None``, of the wrong type, or not
            one the setting takes (the message names the setting, the value and a valid example).
    """
    if value is None:
        raise TxStateSettingError(
            f"txstate option {name!r} is None: pass a value, or leave the option out to use its default."
        )
    key = setting_key(name)
    setting = SETTINGS[key[len(SETTINGS_PREFIX):]]
    return _checked(setting, value, name, key, f"{name}={setting.example}")


def operator_ttl_settings(ttl_by_operator: Mapping[Any, object], option: str = "ttl_by_operator") -> Dict[str, str]:
    """Return ``ttl.operator.<id>`` settings for a mapping of operator id to TTL (``{0: "30min", 2: "off"}``).

    An operator's id is its folder under the checkpoint's ``state/`` (0, 1, ...). ``option`` names
    the mapping in messages (``--ttl-operator`` on the command line).

    Raises:
        TxStateSettingError: an id is not a whole number >= 0, or a TTL is not a duration or ``off``.
    """
    settings: Dict[str, str] = {}
    for operator, ttl in ttl_by_operator.items():
        operator_id = _operator_id(operator)
        if operator_id is None:
            raise TxStateSettingError(
                f"txstate option {option}: {operator!r} is no operator id; an id is a whole number >= 0, the "
                f"operator's folder under the checkpoint's state/ (e.g. {_operator_spelling(option, 0)[1]})."
            )
        key = f"{SETTINGS_PREFIX}{OPERATOR_TTL_PREFIX}{operator_id}"
        name, example = _operator_spelling(option, operator_id)
        settings[key] = _checked(SETTINGS[OPERATOR_TTL], ttl, name, key, example)
    return settings


def spark_settings(options: Mapping[str, object],
                   ttl_by_operator: Optional[Mapping[Any, object]] = None) -> Dict[str, str]:
    """Return the provider class setting plus one ``spark.sql.streaming.stateStore.txstate.*`` per option.

    Raises:
        TxStateSettingError: an option name is invalid or unknown, a value is ``None`` or not one
            its setting takes, two names map to the same setting, or an operator's TTL is wrong.
    """
    result: Dict[str, str] = {PROVIDER_CLASS_KEY: PROVIDER_CLASS}
    origin: Dict[str, str] = {}
    for name, value in options.items():
        key = setting_key(name)
        if key in origin:
            raise TxStateSettingError(
                f"txstate options {origin[key]!r} and {name!r} both set {key}: pass only one of them."
            )
        origin[key] = name
        result[key] = setting_value(name, value)
    result.update(operator_ttl_settings(ttl_by_operator or {}))
    return result


def checked_spark_conf(conf: Iterable[Tuple[str, str]]) -> List[Tuple[str, str]]:
    """Check the txstate settings among Spark settings given in full (``--conf KEY=VALUE``).

    Other keys pass unchanged; a txstate key is checked as the jar will check it and written as the
    jar spells it (``...txstate.block_cache_size_mb`` becomes ``...txstate.blockCacheSizeMB``).

    Raises:
        TxStateSettingError: a txstate key names no setting, or its value is not one it takes.
    """
    checked = []
    for key, value in conf:
        short = key[len(SETTINGS_PREFIX):]
        if not key.startswith(SETTINGS_PREFIX):
            checked.append((key, value))
        elif short.startswith(OPERATOR_TTL_PREFIX):
            checked += operator_ttl_settings({short[len(OPERATOR_TTL_PREFIX):]: value}, option=key).items()
        else:
            full = setting_key(key)
            checked.append((full, setting_value(key, value)))
    return checked


def _checked(setting: Setting, value: object, name: str, key: str, example: str) -> str:
    """The text of ``value`` for Spark, if ``setting`` takes it; else the error names all of it."""
    text = _text(setting, value)
    if text is not None:
        try:
            setting.parse(text)
            return text
        except ValueError:
            pass
    where = f"setting {key}" if name == key else f"option {name!r} ({key})"
    got = repr(text) if text is not None else f"{value!r} (a {type(value).__name__})"
    raise TxStateSettingError(
        f"txstate {where} must be {setting.expects}, got {got}. For example: {example}"
    )


def _text(setting: Setting, value: object) -> Optional[str]:
    """The text Spark is given for a Python value, or None for a value of a type the setting never takes."""
    if isinstance(value, str):
        return value
    if setting.kind == "path":
        return os.fsdecode(os.fspath(value)) if isinstance(value, os.PathLike) else None
    if setting.kind == "duration-or-off" and isinstance(value, timedelta):
        ms, rest = divmod(value, timedelta(milliseconds=1))
        return None if rest else duration_text(ms)
    return str(value) if type(value) is int else None


def _operator_id(operator: object) -> Optional[int]:
    """An operator id given as an int or its text, or None if it is none (negative, a bool, a float...)."""
    if type(operator) is int:
        text = str(operator)
    elif isinstance(operator, str):
        text = operator.strip()
    else:
        return None
    return int(text) if _OPERATOR_ID.fullmatch(text) and int(text) <= 2**63 - 1 else None


def _operator_spelling(option: str, operator: int) -> Tuple[str, str]:
    """One operator's TTL as the user named it, and a valid one spelled alike: a Spark setting, a flag, a mapping."""
    key = f"{SETTINGS_PREFIX}{OPERATOR_TTL_PREFIX}{operator}"
    example = SETTINGS[OPERATOR_TTL].example
    if option.startswith(SETTINGS_PREFIX):
        return key, f"{key}={example}"
    if option.startswith("--"):
        return f"{option} {operator}", f"{option} {operator}={example}"
    return f"{option}[{operator}]", f"{option}={{{operator}: '{example}'}}"
