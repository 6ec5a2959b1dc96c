"""Which bundled jar ``jar_path`` picks when a Spark line has jars for two Scala versions."""

from pathlib import Path

import pytest

import txstate_spark.jar as jar_module
from txstate_spark.__main__ import main
from txstate_spark._version import __version__
from txstate_spark.errors import TxStateUnsupportedSparkError
from txstate_spark.spark_line import SparkVersion


@pytest.fixture
def bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ["3.5_2.12", "3.5_2.13", "4.0_2.13"]:
        (tmp_path / f"txstate-spark-{name}-{__version__}.jar").write_text("not a real jar")
    monkeypatch.setattr(jar_module, "_BUNDLED_JARS_DIR", tmp_path)
    monkeypatch.delenv("TXSTATE_SPARK_JAR", raising=False)
    return tmp_path


def test_bundled_jars_are_named_like_the_table_rows(bundled: Path) -> None:
    assert list(jar_module.bundled_jars()) == ["3.5_2.12", "3.5_2.13", "4.0"]


def test_the_scala_version_of_the_running_spark_picks_the_jar(bundled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jar_module, "detect_spark", lambda: SparkVersion("3.5.9", "pyspark", "2.12"))
    assert Path(jar_module.jar_path()).name == f"txstate-spark-3.5_2.12-{__version__}.jar"
    monkeypatch.setattr(jar_module, "detect_spark", lambda: SparkVersion("3.5.9", "pyspark", "2.13"))
    assert Path(jar_module.jar_path()).name == f"txstate-spark-3.5_2.13-{__version__}.jar"


def test_a_named_scala_version_wins_and_a_line_with_one_jar_needs_none(bundled: Path) -> None:
    assert Path(jar_module.jar_path("3.5", scala="2.13")).name == f"txstate-spark-3.5_2.13-{__version__}.jar"
    assert Path(jar_module.jar_path("4.0")).name == f"txstate-spark-4.0_2.13-{__version__}.jar"


def test_an_unknown_or_missing_scala_version_fails_naming_the_ones_there_are(bundled: Path) -> None:
    with pytest.raises(TxStateUnsupportedSparkError, match="Scala 2.12, 2.13"):
        jar_module.jar_path("3.5")
    with pytest.raises(TxStateUnsupportedSparkError, match="it has Scala 2.13 for that line"):
        jar_module.jar_path("4.0", scala="2.12")


def test_the_command_line_takes_the_scala_version_and_explains_its_choice(
        bundled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jar", "--spark", "3.5", "--scala", "2.13", "--explain"]) == 0
    out, err = capsys.readouterr()
    assert Path(out.strip()).name == f"txstate-spark-3.5_2.13-{__version__}.jar"
    assert "Spark 3.5 (requested) with Scala 2.13 (as asked)" in err
    assert main(["submit-args", "--spark", "3.5", "--scala", "2.12"]) == 0
    assert f"txstate-spark-3.5_2.12-{__version__}.jar" in capsys.readouterr().out
    assert main(["jar", "--spark", "3.5"]) == 1
    assert "--scala 2.12" in capsys.readouterr().err
