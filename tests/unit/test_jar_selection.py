"""Which bundled jar ``jar_path`` picks when a Spark line has jars for two Scala versions."""

from pathlib import Path

import pytest

import txstate_spark.jar as jar_module
from txstate_spark.cli import main
from txstate_spark._version import __version__
from txstate_spark.errors import TxStateJarNotFoundError, TxStateUnsupportedSparkError
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


# ---------------------------------------------------------------------------------------------
# A Spark line, Scala version or $TXSTATE_SPARK_JAR with no jar: the error names what there is and the closest

ALL_LINES = ["3.5_2.12", "3.5_2.13", "4.0_2.13", "4.1_2.13", "4.2_2.13", "4.3_2.13"]
ALL_JARS = "3.5 (Scala 2.12, 2.13), 4.0, 4.1, 4.2, 4.3"


@pytest.fixture
def every_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in ALL_LINES:
        (jars / f"txstate-spark-{name}-{__version__}.jar").write_text("not a real jar")
    monkeypatch.setattr(jar_module, "_BUNDLED_JARS_DIR", jars)
    monkeypatch.delenv("TXSTATE_SPARK_JAR", raising=False)
    return jars


@pytest.mark.parametrize("line,closest", [("4.4", "4.3"), ("5.0", "4.3"), ("3.4", "3.5"), ("2.4", "3.5"),
                                          ("3.6", "3.5"), ("4.0", "4.0")])
def test_the_closest_line_is_the_nearest_neighbour_of_the_same_major_version(line: str, closest: str) -> None:
    assert jar_module.closest_line(line, ["3.5", "4.0", "4.1", "4.2", "4.3"]) == closest


@pytest.mark.parametrize("scala,closest", [("2.11", "2.12"), ("2.14", "2.13"), ("3.3", "2.13"), ("lots", "2.13")])
def test_the_closest_scala_version(scala: str, closest: str) -> None:
    assert jar_module.closest_scala(scala, jar_module.SCALA_VERSIONS) == closest


@pytest.mark.parametrize("spark,closest", [("4.4", "4.3"), ("4.4.0", "4.3"), ("3.4", "3.5")])
def test_a_spark_line_without_a_jar_fails_naming_the_jars_and_the_closest(
        every_line: Path, spark: str, closest: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TxStateUnsupportedSparkError) as refused:
        jar_module.jar_path(spark)
    message = str(refused.value)
    assert f"no jar for Spark {spark} (requested)" in message and f"has jars for Spark {ALL_JARS}" in message
    assert f"the closest is {closest}" in message and f"--spark {closest}" in message, message
    for command in ("jar", "submit-args"):
        assert main([command, "--spark", spark]) == 1
        assert f"the closest is {closest}" in capsys.readouterr().err


def test_a_scala_version_without_jars_is_refused_naming_the_closest(
        every_line: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage_error:
        main(["submit-args", "--spark", "3.5", "--scala", "2.11"])
    assert usage_error.value.code == 2
    err = capsys.readouterr().err
    assert "no jar for Scala '2.11'" in err and "Scala 2.12, 2.13" in err and "the closest is 2.12" in err, err
    with pytest.raises(TxStateUnsupportedSparkError, match=r"the closest is 2\.13 \(--scala 2\.13"):
        jar_module.jar_path("4.3", scala="3.3")
    with pytest.raises(TxStateUnsupportedSparkError, match=r"Spark 4\.0 on Scala 2\.12 .*the closest is Scala 2\.13"):
        jar_module.jar_path("4.0", scala="2.12")


def test_a_missing_jar_in_the_variable_names_the_jars_beside_it_and_the_closest(
        every_line: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = tmp_path / "target"
    built.mkdir()
    for name in ("4.2_2.13", "4.3_2.13"):
        (built / f"txstate-spark-{name}-{__version__}.jar").write_text("not a real jar")
    (built / "unrelated.jar").write_text("not ours")
    monkeypatch.setenv("TXSTATE_SPARK_JAR", str(built / "txstate-spark-4.3_2.13-0.1.0.jar"))  # an older version
    with pytest.raises(TxStateJarNotFoundError) as refused:
        jar_module.jar_path("4.3")
    message = str(refused.value)
    assert f"{built} holds txstate-spark-4.2_2.13-{__version__}.jar, txstate-spark-4.3_2.13-{__version__}.jar;" in message
    assert f"the closest is txstate-spark-4.3_2.13-{__version__}.jar" in message, message
    assert f"bundled in this package (Spark {ALL_JARS})" in message, message
    monkeypatch.setenv("TXSTATE_SPARK_JAR", str(tmp_path / "nowhere" / "txstate.jar"))
    with pytest.raises(TxStateJarNotFoundError, match=r"nor does its directory .*nowhere"):
        jar_module.jar_path("4.3")


def test_the_variable_naming_a_jar_of_another_line_names_the_closest_line_there_is(
        every_line: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = tmp_path / f"txstate-spark-4.3_2.13-{__version__}.jar"
    jar.write_text("not a real jar")
    monkeypatch.setenv("TXSTATE_SPARK_JAR", str(jar))
    with pytest.raises(TxStateUnsupportedSparkError) as refused:
        jar_module.jar_path("4.4")
    message = str(refused.value)
    assert "is built for Spark 4.3, but Spark 4.4 (requested)" in message and "no jar for Spark 4.4" in message
    assert f"have jars for Spark {ALL_JARS}; the closest is 4.3" in message and "make jar SPARK=4.4" not in message
