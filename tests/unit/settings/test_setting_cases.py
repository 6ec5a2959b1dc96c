"""The values of tests/fixtures/settings-cases.json through the Python parser. The jar's parser runs
the same table (txstate.spark.SettingsCasesTest): both must accept and refuse the same values, with
the same result, so configure() and submit-args refuse exactly what the jar would."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from txstate_spark import SETTINGS_PREFIX, TxStateSettingError
from txstate_spark.settings.spec import OPERATOR_TTL, PREFIX, SETTINGS
from txstate_spark.settings.values import operator_ttl_settings, setting_value

CASES = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "settings-cases.json").read_text())
VALID: List[Tuple[str, str, Any]] = [
    (name, text, parsed) for name, cases in CASES["settings"].items() for text, parsed in cases["valid"].items()]
INVALID: List[Tuple[str, str]] = [
    (name, text) for name, cases in CASES["settings"].items() for text in cases["invalid"]]


def test_the_table_covers_every_setting_of_the_specification():
    assert sorted(CASES["settings"]) == sorted(SETTINGS)
    assert len(VALID) + len(INVALID) >= 100


@pytest.mark.parametrize("name, text, parsed", VALID)
def test_a_valid_value_parses_to_the_tables_result(name: str, text: str, parsed: Any):
    assert SETTINGS[name].parse(text) == parsed


@pytest.mark.parametrize("name, text", INVALID)
def test_an_invalid_value_is_refused_saying_what_the_setting_takes(name: str, text: str):
    with pytest.raises(ValueError) as raised:
        SETTINGS[name].parse(text)
    assert str(raised.value) == SETTINGS[name].expects


@pytest.mark.parametrize("name, text", INVALID)
def test_options_with_an_invalid_value_fail_naming_setting_value_and_example(name: str, text: str):
    with pytest.raises(TxStateSettingError) as raised:
        if name == OPERATOR_TTL:
            operator_ttl_settings({3: text})
        else:
            setting_value(name, text)
    message = str(raised.value)
    key = SETTINGS_PREFIX + name.replace("<id>", "3")
    assert f"({key}) must be {SETTINGS[name].expects}, got {text!r}. For example: " in message
    assert message.endswith(SETTINGS[name].example + ("'}" if name == OPERATOR_TTL else ""))


@pytest.mark.parametrize("text, operator", CASES["operatorIds"]["valid"].items())
def test_a_valid_operator_id_names_its_setting(text: str, operator: int):
    assert operator_ttl_settings({text: "1h"}) == {f"{SETTINGS_PREFIX}ttl.operator.{operator}": "1h"}


@pytest.mark.parametrize("text", CASES["operatorIds"]["invalid"])
def test_an_invalid_operator_id_is_refused(text: str):
    with pytest.raises(TxStateSettingError, match="is no operator id"):
        operator_ttl_settings({text: "1h"})


@pytest.mark.parametrize("name, value, parsed", CASES["python"]["valid"])
def test_python_numbers_are_given_to_spark_as_their_text(name: str, value: Any, parsed: Any):
    assert SETTINGS[name].parse(setting_value(name, value)) == parsed


@pytest.mark.parametrize("name, value", CASES["python"]["invalid"])
def test_python_values_of_a_wrong_type_or_range_are_refused(name: str, value: Any):
    with pytest.raises(TxStateSettingError, match=re.escape(f"must be {SETTINGS[name].expects}, got ")):
        setting_value(name, value)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_each_settings_example_and_default_are_values_it_takes(name: str):
    setting = SETTINGS[name]
    setting.parse(setting.example)
    if setting.default is not None:
        setting.parse(setting.default)
    assert setting.meaning and "{" not in setting.expects


def test_the_prefix_is_the_specifications():
    assert SETTINGS_PREFIX == PREFIX == "spark.sql.streaming.stateStore.txstate."
