"""Keyword options -> Spark settings (txstate_spark.settings.values), without a JVM: option names in snake
or camel case, values as Spark strings, and the errors a wrong name or value gets (each names it).
The values each setting takes are in test_setting_cases.py (the table the jar is tested on too)."""

from __future__ import annotations

import inspect
from datetime import timedelta
from pathlib import Path

import pytest

from txstate_spark import (
    KNOWN_SETTINGS,
    PROVIDER_CLASS,
    SETTINGS_PREFIX,
    TxStateConfigurationError,
    TxStateSettingError,
    configure,
)
from txstate_spark import session
from txstate_spark.settings.names import setting_key, snake_case
from txstate_spark.settings.spec import SETTINGS
from txstate_spark.settings.values import checked_spark_conf, setting_value, spark_settings

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"


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


def test_the_per_operator_ttl_is_no_option_name_and_the_error_says_what_to_pass():
    for name in ("ttl.operator.0", SETTINGS_PREFIX + "ttl.operator.0"):
        with pytest.raises(TxStateSettingError) as raised:
            setting_key(name)
        assert str(raised.value).startswith(f"txstate option {name!r} sets the TTL of one operator: pass "
                                            "ttl_by_operator={<id>: '30min'} to configure(), or --ttl-operator")


def test_values_keep_their_text_and_paths_become_plain_strings():
    assert setting_value("snapshot_interval", 3) == "3"
    assert setting_value("ttl", "10 min") == "10 min"
    assert setting_value("max_uncommitted_bytes", "64MB") == "64MB"
    assert setting_value("local_dir", Path("/data/tx state")) == "/data/tx state"


def test_a_timedelta_ttl_becomes_its_largest_exact_unit():
    assert setting_value("ttl", timedelta(days=7)) == "7d"
    assert setting_value("ttl", timedelta(minutes=90)) == "90min"
    assert setting_value("ttl", timedelta(seconds=1.5)) == "1500ms"
    for bad in (timedelta(0), timedelta(microseconds=1500), timedelta(days=-1)):
        with pytest.raises(TxStateSettingError, match="must be a duration > 0"):
            setting_value("ttl", bad)


def test_a_bad_value_names_the_option_the_setting_the_value_and_an_example():
    with pytest.raises(TxStateSettingError) as raised:
        setting_value("max_uncommitted_bytes", "lots")
    assert str(raised.value) == (
        f"txstate option 'max_uncommitted_bytes' ({SETTINGS_PREFIX}maxUncommittedBytes) must be a byte size >= 1: "
        "a number of bytes, or a number with a unit k, m, g or t, optionally followed by b (512k, 64m, 64MB, 1g), "
        "or -1 for no limit, got 'lots'. For example: max_uncommitted_bytes=64m")
    with pytest.raises(TxStateSettingError) as raised:
        setting_value("localDir", True)
    assert str(raised.value) == (f"txstate option 'localDir' ({SETTINGS_PREFIX}localDir) must be a directory path "
                                 "(empty: the default), got True (a bool). For example: localDir=/mnt/txstate")
    assert isinstance(raised.value, TxStateConfigurationError) and isinstance(raised.value, ValueError)


@pytest.mark.parametrize("typo, suggested", [
    ("local_dri", "local_dir"), ("blockCacheSize", "blockCacheSizeMB"), ("max_uncommited_bytes", "max_uncommitted_bytes"),
    ("snapshot_intervall", "snapshot_interval"), (SETTINGS_PREFIX + "hotCacheSize", SETTINGS_PREFIX + "hotCacheSizeMB"),
])
def test_a_typo_in_a_name_suggests_the_closest_setting_spelled_as_the_user_spells(typo: str, suggested: str):
    with pytest.raises(TxStateSettingError) as raised:
        setting_key(typo)
    assert str(raised.value).startswith(f"Unknown txstate option {typo!r}. Did you mean {suggested!r}? ")


def test_per_operator_ttls_become_one_setting_each_and_bad_ids_are_refused():
    settings = spark_settings({"ttl": "7d"}, {0: "30min", 2: "off", "5": timedelta(hours=1)})
    assert {k: v for k, v in settings.items() if "ttl" in k} == {
        SETTINGS_PREFIX + "ttl": "7d", SETTINGS_PREFIX + "ttl.operator.0": "30min",
        SETTINGS_PREFIX + "ttl.operator.2": "off", SETTINGS_PREFIX + "ttl.operator.5": "1h"}
    for bad_id in (-1, "x", True, 1.0, "1.5"):
        with pytest.raises(TxStateSettingError, match=r"is no operator id; an id is a whole number >= 0"):
            spark_settings({}, {bad_id: "1h"})
    with pytest.raises(TxStateSettingError) as raised:
        spark_settings({}, {3: "30 minutes"})
    assert str(raised.value).startswith(f"txstate option 'ttl_by_operator[3]' ({SETTINGS_PREFIX}ttl.operator.3) must "
                                        "be a duration > 0 with a unit")
    assert str(raised.value).endswith("got '30 minutes'. For example: ttl_by_operator={3: '30min'}")


def test_full_spark_settings_are_checked_and_spelled_as_the_jar_spells_them():
    assert checked_spark_conf([("spark.driver.memory", "8g"), (SETTINGS_PREFIX + "block_cache_size_mb", "1g"),
                               (SETTINGS_PREFIX + "ttl.operator.1", "off")]) == [
        ("spark.driver.memory", "8g"), (SETTINGS_PREFIX + "blockCacheSizeMB", "1g"), (SETTINGS_PREFIX + "ttl.operator.1", "off")]
    with pytest.raises(TxStateSettingError) as raised:
        checked_spark_conf([(SETTINGS_PREFIX + "snapshotInterval", "0")])
    assert str(raised.value) == (f"txstate setting {SETTINGS_PREFIX}snapshotInterval must be a whole number >= 1, "
                                 f"got '0'. For example: {SETTINGS_PREFIX}snapshotInterval=10")
    with pytest.raises(TxStateSettingError, match="is no operator id"):
        checked_spark_conf([(SETTINGS_PREFIX + "ttl.operator.join", "1h")])


class _Builder:
    """What configure() sees of a SparkSession.Builder, enough to show it refuses before anything else."""

    def __init__(self) -> None:
        self._options: dict = {}

    def config(self, key: str, value: str) -> "_Builder":
        self._options[key] = value
        return self


def test_configure_refuses_a_bad_value_before_looking_for_the_jar(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TXSTATE_SPARK_JAR", "/no/such/txstate.jar")  # looking it up would fail differently
    for options in ({"max_uncommitted_bytes": "lots"}, {"ttl": 3600}, {"ttl": "7 days"}, {"snapshot_interval": 0},
                    {"local_dir": True}, {"block_cache_size_mb": -5}, {"blockCacheSizeMB": "512k"},
                    {"ttl_by_operator": {0: "soon"}}):
        builder = _Builder()
        with pytest.raises(TxStateSettingError):
            configure(builder, **options)  # type: ignore[arg-type]
        assert builder._options == {}, options


def test_configure_has_one_typed_keyword_per_setting_in_snake_case():
    parameters = inspect.signature(configure).parameters.values()
    keywords = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert keywords == [snake_case(name) for name in KNOWN_SETTINGS] + ["ttl_by_operator"]
    assert all(p.default is None for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)
    doc = inspect.getdoc(configure) or ""
    assert all(f"{keyword}:" in doc for keyword in keywords), "every keyword has its line under Args"


def test_a_none_value_names_the_option_and_says_to_leave_it_out():
    with pytest.raises(TxStateConfigurationError) as raised:
        setting_value("block_cache_size_mb", None)
    assert str(raised.value) == ("txstate option 'block_cache_size_mb' is None: pass a value, or leave the option "
                                 "out to use its default.")


def test_no_options_still_choose_the_provider_and_options_do_not_change_it():
    assert spark_settings({}) == {PROVIDER_KEY: PROVIDER_CLASS}
    assert spark_settings({"ttl": "1h"})[PROVIDER_KEY] == PROVIDER_CLASS


def test_two_names_for_one_setting_are_refused_naming_both():
    with pytest.raises(TxStateConfigurationError) as raised:
        spark_settings({SETTINGS_PREFIX + "localDir": "/a", "local_dir": "/b"})
    assert str(raised.value) == (f"txstate options '{SETTINGS_PREFIX}localDir' and 'local_dir' both set "
                                 f"{SETTINGS_PREFIX}localDir: pass only one of them.")


def test_configure_sets_each_typed_keyword_and_camel_case_options_alike(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path):
    jar = tmp_path / "txstate.jar"
    jar.write_bytes(b"")
    monkeypatch.setenv("TXSTATE_SPARK_JAR", str(jar))
    # As in a fresh Python process: `make test` runs these tests in the process whose earlier Spark tests
    # started a driver JVM, and with one running configure() leaves spark.jars alone (test_packaging).
    monkeypatch.setattr(session, "_running_driver_jvm", lambda: None)
    examples = {snake_case(name): SETTINGS[name].example for name in KNOWN_SETTINGS}
    typed = configure(_Builder(), **examples, ttl_by_operator={1: "off"})  # type: ignore[arg-type]
    assert typed._options == {
        "spark.jars": str(jar.resolve()), PROVIDER_KEY: PROVIDER_CLASS, SETTINGS_PREFIX + "ttl.operator.1": "off",
        "spark.plugins": "txstate.spark.TxStatePlugin",
        **{SETTINGS_PREFIX + name: SETTINGS[name].example for name in KNOWN_SETTINGS}}
    camel = configure(_Builder(), **{name: SETTINGS[name].example for name in KNOWN_SETTINGS},
                      ttl_by_operator={1: "off"})
    assert camel._options == typed._options
    with pytest.raises(TxStateSettingError, match="both set"):
        configure(_Builder(), local_dir="/a", localDir="/b")
