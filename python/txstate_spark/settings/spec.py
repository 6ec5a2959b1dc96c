"""The specification of the txstate settings and the rules their values follow.

``settings.json`` beside this module lists every setting (name, kind, minimum, default, example,
meaning) and the units values may carry. The jar reads the same file (the build copies it in as
``txstate-settings.json``) and parses values by the same rules (``txstate.spark.SettingSpec``), so a
value this module accepts is one the jar accepts, with the same result:
``tests/fixtures/settings-cases.json`` runs through both.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, Mapping, Tuple, Union

#: A value as the store uses it: bytes, milliseconds or a count; a path; None for "no limit", "off"
#: or (an empty path) the default.
Parsed = Union[int, str, None]

#: The one setting per stateful operator: ``ttl.operator.<id>``.
OPERATOR_TTL = "ttl.operator.<id>"

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
_MIB = 1 << 20
# The jar trims values with Java's String.trim: every character up to and including the space.
_TRIMMED = "".join(map(chr, range(33)))
_NUMBER = re.compile(r"(-?[0-9]+) *([a-z]*)")
# The text that means None: no limit, or no TTL.
_NONE = {"count-or-unlimited": "-1", "bytes-or-unlimited": "-1", "duration-or-off": "off"}


@dataclass(frozen=True)
class Setting:
    """One txstate setting of the specification."""

    name: str
    kind: str
    minimum: int
    default: Union[str, None]
    example: str
    meaning: str

    @property
    def key(self) -> str:
        """The full Spark setting (for ``ttl.operator.<id>``, with the placeholder)."""
        return PREFIX + self.name

    @property
    def expects(self) -> str:
        """What a value must be, in the words of every error message (the jar's too)."""
        return _KINDS[self.kind].replace("{minimum}", str(self.minimum))

    def parse(self, text: str) -> Parsed:
        """Parse a value as the jar does (trimmed; units in any case).

        Raises:
            ValueError: the value is not one of this setting's kind (the message is :attr:`expects`).
        """
        text = text.strip(_TRIMMED)
        if self.kind == "path":
            return text or None
        text = text.lower()
        if text == _NONE.get(self.kind):
            return None
        number = _NUMBER.fullmatch(text)
        value = _value(self.kind, int(number[1]), number[2]) if number else None
        lowest, highest = self._range()
        if value is None or not lowest <= value <= highest:
            raise ValueError(self.expects)
        return value

    def _range(self) -> Tuple[int, int]:
        """The lowest and highest parsed value (the jar's Int for whole numbers, else its Long)."""
        if self.kind == "mebibytes":
            return self.minimum * _MIB, _LONG_MAX
        if self.kind == "duration-or-off":
            return 1, _LONG_MAX
        return self.minimum, _INT_MAX if self.kind == "whole-number" else _LONG_MAX


def _value(kind: str, number: int, unit: str) -> Union[int, None]:
    """The number in the store's unit (bytes, milliseconds, a count), or None if the unit does not fit."""
    if kind in ("whole-number", "count-or-unlimited"):
        return number if unit == "" else None
    if kind == "duration-or-off":
        factor = _DURATION_UNITS.get(unit)  # a duration needs its unit
        return None if factor is None else number * factor
    if kind == "mebibytes" and unit == "":
        return number * _MIB
    factor = _SIZE_UNITS.get(unit or "b")
    if factor is None or kind == "mebibytes" and number * factor % _MIB:
        return None  # the *SizeMB settings take whole MiB
    return number * factor


def duration_text(ms: int) -> str:
    """``604800000`` -> ``7d``: a duration in milliseconds, in the largest unit that divides it."""
    units = sorted(_DURATION_UNITS.items(), key=lambda unit: (-unit[1], -len(unit[0])))
    return next(f"{ms // size}{unit}" for unit, size in units if ms % size == 0 and (ms or size == 1))


def _load() -> Tuple[str, Dict[str, str], Dict[str, int], Dict[str, int], Dict[str, Setting]]:
    text = resources.files("txstate_spark.settings").joinpath("settings.json").read_text("utf-8")
    spec: Mapping[str, Any] = json.loads(text)
    settings = {
        entry["name"]: Setting(entry["name"], entry["kind"], int(entry.get("minimum", 0)), entry["default"],
                               entry["example"], entry["meaning"])
        for entry in spec["settings"]
    }
    return spec["prefix"], spec["kinds"], spec["units"]["size"], spec["units"]["duration"], settings


PREFIX, _KINDS, _SIZE_UNITS, _DURATION_UNITS, SETTINGS = _load()
