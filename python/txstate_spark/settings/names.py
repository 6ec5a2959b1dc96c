"""The names of the txstate settings: snake_case or camelCase, with or without the Spark prefix.

A name is matched against the settings the jar defines (the specification, :mod:`.spec`), so a
typo fails at once, suggesting the closest name, rather than when the first streaming query starts.
"""

from __future__ import annotations

import difflib
import re
from typing import Tuple

from txstate_spark.constants import SETTINGS_PREFIX
from txstate_spark.errors import TxStateSettingError
from txstate_spark.settings.spec import OPERATOR_TTL, SETTINGS

#: Every setting the jar defines, by the name that follows the prefix (the specification's order).
#: The one setting per operator, ``ttl.operator.<id>``, is no option name: pass ``ttl_by_operator``.
KNOWN_SETTINGS: Tuple[str, ...] = tuple(name for name in SETTINGS if name != OPERATOR_TTL)

#: ``ttl.operator.``: what precedes an operator's id in its TTL setting.
OPERATOR_TTL_PREFIX = OPERATOR_TTL[: -len("<id>")]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*")
_BY_FOLDED_NAME = {name.lower(): name for name in KNOWN_SETTINGS}


def snake_case(name: str) -> str:
    """``blockCacheSizeMB`` -> ``block_cache_size_mb``: the keyword spelling of a setting."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def setting_key(name: str) -> str:
    """Return the full Spark setting for an option name.

    ``block_cache_size_mb`` and ``blockCacheSizeMB`` both give
    ``spark.sql.streaming.stateStore.txstate.blockCacheSizeMB``; a name that already carries the
    prefix is accepted as is. Names are matched against the settings the jar defines, so a typo
    fails here (suggesting the closest name) rather than when the first streaming query starts.

    Raises:
        TxStateSettingError: the name is not snake_case/camelCase, or names no txstate setting.
    """
    short = name[len(SETTINGS_PREFIX):] if name.startswith(SETTINGS_PREFIX) else name
    if short.startswith(OPERATOR_TTL_PREFIX):
        raise TxStateSettingError(
            f"txstate option {name!r} sets the TTL of one operator: pass ttl_by_operator={{<id>: '30min'}} "
            f"to configure(), or --ttl-operator <id>=30min to submit-args; either becomes "
            f"{SETTINGS_PREFIX}{OPERATOR_TTL_PREFIX}<id>."
        )
    if not _NAME.fullmatch(short):
        raise TxStateSettingError(
            f"Invalid txstate option name {name!r}: expected a snake_case or camelCase name such as "
            f"'block_cache_size_mb' or 'blockCacheSizeMB' (it becomes {SETTINGS_PREFIX}<name>)."
        )
    folded = short.replace("_", "").lower()
    known = _BY_FOLDED_NAME.get(folded)
    if known is None:
        close = difflib.get_close_matches(folded, _BY_FOLDED_NAME, n=1)
        hint = f" Did you mean {_spelled_like(name, _BY_FOLDED_NAME[close[0]])!r}?" if close else ""
        raise TxStateSettingError(
            f"Unknown txstate option {name!r}.{hint} The txstate settings are: "
            f"{', '.join(KNOWN_SETTINGS)} (snake_case works too, e.g. 'local_dir'); each becomes "
            f"{SETTINGS_PREFIX}<name>."
        )
    return SETTINGS_PREFIX + known


def _spelled_like(used: str, known: str) -> str:
    """``known`` as the user would have written it: in full, in snake_case, or in camelCase."""
    if used.startswith(SETTINGS_PREFIX):
        return SETTINGS_PREFIX + known
    return snake_case(known) if "_" in used or used.islower() else known
