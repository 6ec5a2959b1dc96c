"""Keyword options -> Spark settings (txstate_spark.settings), without a JVM: option names in snake
or camel case, values as Spark strings, and the errors a wrong name or value gets (each names it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from txstate_spark import KNOWN_SETTINGS, PROVIDER_CLASS, SETTINGS_PREFIX, TxStateConfigurationError
from txstate_spark.settings import setting_key, setting_value, spark_settings

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"


def snake_case(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def test_snake_case_and_camel_case_options_map_to_the_same_setting() -> None:
    assert setting_key("max_write_buffer_number") == SETTINGS_PREFIX + "maxWriteBufferNumber"
    assert setting_key("maxWriteBufferNumber") == SETTINGS_PREFIX + "maxWriteBufferNumber"
    assert setting_key("block_cache_size_mb") == SETTINGS_PREFIX + "blockCacheSizeMB"
    assert setting_key("local_dir") == SETTINGS_PREFIX + "localDir"
    assert setting_key(SETTINGS_PREFIX + "localDir") == SETTINGS_PREFIX + "localDir"
    assert SETTINGS_PREFIX == "spark.sql.streaming.stateStore.txstate."
    for name in KNOWN_SETTINGS:
        assert setting_key(name) == SETTINGS_PREFIX + name


def test_unknown_option_names_fail_fast_and_list_the_settings() -> None:
    with pytest.raises(TxStateConfigurationError, match="Unknown txstate option 'local_dri'") as raised:
        setting_key("local_dri")
    assert all(name in str(raised.value) for name in KNOWN_SETTINGS)


@pytest.mark.parametrize("name", ["max-bytes", "_private", "trailing_", "double__underscore", "a.b", "", "9lives"])
def test_invalid_option_names_are_rejected(name: str) -> None:
    with pytest.raises(TxStateConfigurationError, match="option name"):
        setting_key(name)


def test_option_values_become_spark_strings() -> None:
    settings = spark_settings({"block_cache_size_mb": 64, "writeBufferSizeMB": "32",
                               "local_dir": Path("/tmp/txstate")})
    assert settings == {
        PROVIDER_KEY: PROVIDER_CLASS,
        SETTINGS_PREFIX + "blockCacheSizeMB": "64",
        SETTINGS_PREFIX + "writeBufferSizeMB": "32",
        SETTINGS_PREFIX + "localDir": "/tmp/txstate",
    }
    assert setting_value("flag", True) == "true" and setting_value("flag", False) == "false"
    with pytest.raises(TxStateConfigurationError, match="None"):
        spark_settings({"local_dir": None})
    with pytest.raises(TxStateConfigurationError, match="both set"):
        spark_settings({"local_dir": "/a", "localDir": "/b"})



def test_every_setting_is_found_whatever_the_case_and_underscores():
    for name in KNOWN_SETTINGS:
        for spelled in (snake_case(name), name.upper(), name.lower()):
            assert setting_key(spelled) == SETTINGS_PREFIX + name, spelled


def test_a_prefixed_name_is_checked_like_a_short_one():
    with pytest.raises(TxStateConfigurationError) as raised:
        setting_key(SETTINGS_PREFIX + "blockCacheSize")
    assert str(raised.value).startswith(f"Unknown txstate option '{SETTINGS_PREFIX}blockCacheSize'.")
    with pytest.raises(TxStateConfigurationError) as raised:
        setting_key(SETTINGS_PREFIX + "a-b")
    assert str(raised.value).startswith(f"Invalid txstate option name '{SETTINGS_PREFIX}a-b': expected a snake_case")


def test_the_per_operator_ttl_is_no_option_name():
    # ttl.operator.<id> is set as a Spark conf; as an option name it is refused, not mangled.
    with pytest.raises(TxStateConfigurationError) as raised:
        setting_key("ttl.operator.0")
    assert str(raised.value).startswith("Invalid txstate option name 'ttl.operator.0': expected a snake_case")


def test_values_keep_their_text_and_paths_become_plain_strings():
    assert setting_value("snapshot_interval", 0) == "0"
    assert setting_value("ttl", "10 minutes") == "10 minutes"
    assert setting_value("hot_cache_size_mb", 1.5) == "1.5"
    assert setting_value("local_dir", Path("/data/tx state")) == "/data/tx state"


def test_a_none_value_names_the_option_and_says_to_leave_it_out():
    with pytest.raises(TxStateConfigurationError) as raised:
        setting_value("block_cache_size_mb", None)
    assert str(raised.value) == ("txstate option 'block_cache_size_mb' is None: pass a value, or leave the option "
                                 "out to use its default.")


def test_no_options_still_choose_the_provider_and_options_do_not_change_it():
    assert spark_settings({}) == {PROVIDER_KEY: PROVIDER_CLASS}
    assert spark_settings({"ttl": "1 hour"})[PROVIDER_KEY] == PROVIDER_CLASS


def test_two_names_for_one_setting_are_refused_naming_both():
    with pytest.raises(TxStateConfigurationError) as raised:
        spark_settings({SETTINGS_PREFIX + "localDir": "/a", "local_dir": "/b"})
    assert str(raised.value) == (f"txstate options '{SETTINGS_PREFIX}localDir' and 'local_dir' both set "
                                 f"{SETTINGS_PREFIX}localDir: pass only one of them.")
