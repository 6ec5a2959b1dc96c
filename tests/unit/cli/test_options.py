"""``python -m txstate_spark`` refuses a bad setting at once: exit status 2, the message on stderr,
before any jar is looked up (the runs below point $TXSTATE_SPARK_JAR at nothing) and with no JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

PYTHON_SRC = Path(__file__).resolve().parents[3] / "python"
PREFIX = "spark.sql.streaming.stateStore.txstate."


def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment: Dict[str, str] = {**os.environ, "PYTHONPATH": str(PYTHON_SRC),
                                   "TXSTATE_SPARK_JAR": "/no/such/txstate.jar", **env}
    return subprocess.run([sys.executable, "-m", "txstate_spark", *args], env=environment, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("option, setting, value, example", [
    ("max_uncommitted_bytes=lots", "maxUncommittedBytes", "lots", "max_uncommitted_bytes=64m"),
    ("blockCacheSizeMB=-5", "blockCacheSizeMB", "-5", "blockCacheSizeMB=64"),
    ("ttl=3600", "ttl", "3600", "ttl=7d"),
    ("ttl=7 days", "ttl", "7 days", "ttl=7d"),
    ("snapshot_interval=0", "snapshotInterval", "0", "snapshot_interval=10"),
])
def test_submit_args_exits_2_naming_the_setting_the_value_and_an_example(option, setting, value, example):
    done = cli("submit-args", "-o", option)
    assert done.returncode == 2 and done.stdout == ""
    assert f"({PREFIX}{setting}) must be " in done.stderr and f"got '{value}'" in done.stderr, done.stderr
    assert f"For example: {example}" in done.stderr, done.stderr


def test_submit_args_checks_per_operator_ttls_and_suggests_names():
    bad_ttl = cli("submit-args", "--ttl-operator", "2=soon")
    assert bad_ttl.returncode == 2
    assert f"'--ttl-operator 2' ({PREFIX}ttl.operator.2)" in bad_ttl.stderr and "--ttl-operator 2=30min" in bad_ttl.stderr
    bad_id = cli("submit-args", "--ttl-operator", "join=1h")
    assert bad_id.returncode == 2 and "'join' is no operator id" in bad_id.stderr
    typo = cli("submit-args", "-o", "local_dri=/mnt/state")
    assert typo.returncode == 2 and "Did you mean 'local_dir'?" in typo.stderr
    twice = cli("submit-args", "-o", "local_dir=/a", "-o", "localDir=/b")
    assert twice.returncode == 2 and "both set" in twice.stderr


def test_good_settings_reach_the_jar_lookup_and_per_operator_ttls_become_settings(tmp_path: Path):
    jar = tmp_path / "txstate.jar"
    jar.write_bytes(b"")
    done = cli("submit-args", "-o", "max_uncommitted_bytes=64MB", "--ttl-operator", "0=30min",
               "--ttl-operator", "2=off", TXSTATE_SPARK_JAR=str(jar))
    assert done.returncode == 0, done.stderr
    assert f"--conf {PREFIX}maxUncommittedBytes=64MB" in done.stdout
    assert f"--conf {PREFIX}ttl.operator.0=30min --conf {PREFIX}ttl.operator.2=off" in done.stdout
    unfound = cli("submit-args", "-o", "ttl=7d")
    assert unfound.returncode == 1 and "TXSTATE_SPARK_JAR" in unfound.stderr, "good values go on to the jar lookup"


@pytest.mark.parametrize("command", [["migrate", "/tmp/checkpoint", "--to", "txstate"],
                                     ["serve", "/tmp/checkpoint", "--operator", "0"]])
def test_migrate_and_serve_check_txstate_settings_given_with_conf(command):
    done = cli(*command, "--conf", f"{PREFIX}writeBufferSizeMB=3.5")
    assert done.returncode == 2
    assert f"txstate setting {PREFIX}writeBufferSizeMB must be a size >= 1 MiB" in done.stderr, done.stderr
    assert f"got '3.5'. For example: {PREFIX}writeBufferSizeMB=32" in done.stderr
    typo = cli(*command, "--conf", f"{PREFIX}hotCacheSize=8")
    assert typo.returncode == 2 and f"Did you mean '{PREFIX}hotCacheSizeMB'?" in typo.stderr


def test_the_help_documents_units_and_the_per_operator_syntax():
    done = cli("submit-args", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--ttl-operator ID=DURATION" in text and "64MB" in text and "30min" in text
