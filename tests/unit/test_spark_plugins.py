"""``spark.plugins`` as configure() and submit-args write it: the user's plugins kept, ours appended once."""

import shlex
import subprocess
import sys
from pathlib import Path

from txstate_spark.constants import PLUGIN_CLASS
from txstate_spark.plugins import with_plugin

REPO = Path(__file__).resolve().parents[2]


def test_ours_alone_when_the_user_lists_none() -> None:
    assert with_plugin(None) == PLUGIN_CLASS
    assert with_plugin(" , ") == PLUGIN_CLASS


def test_the_users_plugins_keep_their_order_and_ours_comes_last_once() -> None:
    assert with_plugin("com.a.One, com.b.Two") == f"com.a.One,com.b.Two,{PLUGIN_CLASS}"
    assert with_plugin(f"{PLUGIN_CLASS},com.a.One") == f"{PLUGIN_CLASS},com.a.One"


def test_submit_args_prints_one_spark_plugins_with_the_users_first(tmp_path: Path) -> None:
    jar = tmp_path / "txstate.jar"
    jar.write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "txstate_spark", "submit-args", "--plugins", "com.a.One"],
                          capture_output=True, text=True, cwd=str(REPO),
                          env={"PYTHONPATH": str(REPO / "python"), "TXSTATE_SPARK_JAR": str(jar)})
    assert done.returncode == 0, done.stderr
    confs = [arg for arg in shlex.split(done.stdout) if arg.startswith("spark.plugins=")]
    assert confs == [f"spark.plugins=com.a.One,{PLUGIN_CLASS}"]
