"""The published Maven artifacts, consumed as a user's job consumes them.

`make test` publishes the newest line and 3.5 (Scala 2.12) into target/maven-repo (`make
publish-local DIR=target/maven-repo` does the same for every line); these tests run on the
installed pyspark's line:
  * the layout: the jar the wheel carries, its POM (only Provided dependencies, and the fields Maven
    Central asks for), sources and javadoc jars, a .sha1 and .md5 beside every file;
  * `spark-submit --packages <coordinates> --repositories file://...` runs a word count on txstate
    and restarts it, exactly; then a PySpark session with `spark.jars.packages` restarts it again
    from the same checkpoint in a process of its own. Each resolves into an Ivy directory of its
    own, which must end up holding our jar alone: the POM brings nothing else.
The sbt build that compiles against the artifact is `consumerNN/test` (project/ConsumerProjects.scala),
in make test's sbt run.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Dict, List

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = (REPO / "VERSION").read_text().strip()
MAVEN_REPO = REPO / "target" / "maven-repo"
JOB = REPO / "tests" / "jobs" / "maven_package_job.py"
GROUP = "io.github.txstate"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# Each job starts a JVM and resolves with Ivy; on two busy cores that is well under this.
JOB_TIMEOUT_S = 300

TABLE = [row.split() for row in (REPO / "project" / "spark-lines.tsv").read_text().splitlines()
         if row.strip() and not row.startswith("#")]
PYSPARK_LINE = ".".join(metadata.version("pyspark").split(".")[:2])
ROW = next(row for row in TABLE if row[0].split("_")[0] == PYSPARK_LINE and row[3] != "-")
SCALA = ".".join(ROW[2].split(".")[:2])
ARTIFACT = f"txstate-spark-{PYSPARK_LINE}_{SCALA}"
COORDINATES = f"{GROUP}:{ARTIFACT}:{VERSION}"
VERSION_DIR = MAVEN_REPO / GROUP.replace(".", "/") / ARTIFACT / VERSION
BUILT_JAR = REPO / "target" / f"{ARTIFACT}-{VERSION}.jar"

FILES = {"a.txt": ["ant", "bee", "ant", "cat"], "b.txt": ["bee", "dog", "ant"], "c.txt": ["cat", "eel", "bee", "bee"]}


def published(suffix: str) -> Path:
    path = VERSION_DIR / f"{ARTIFACT}-{VERSION}{suffix}"
    assert path.is_file(), (f"{path} is missing: make test publishes it; alone: make publish-local "
                            f"DIR=target/maven-repo SPARK={ROW[0]}")
    return path


# ---------------------------------------------------------------------------------------------
# the layout


def test_the_published_jar_is_the_one_the_wheel_carries_with_sources_javadoc_and_checksums() -> None:
    jar = published(".jar")
    assert jar.read_bytes() == BUILT_JAR.read_bytes(), f"{jar} differs from {BUILT_JAR}: publish after `make jar`"
    files = [published(suffix) for suffix in (".jar", ".pom", "-sources.jar", "-javadoc.jar")]
    for path in files:
        data = path.read_bytes()
        for algorithm in ("sha1", "md5"):
            checksum = Path(f"{path}.{algorithm}")
            assert checksum.is_file(), f"{checksum} is missing"
            assert checksum.read_text().split()[0] == hashlib.new(algorithm, data).hexdigest(), f"{checksum} is wrong"
    import zipfile

    with zipfile.ZipFile(published("-sources.jar")) as sources:
        assert "txstate/spark/TxStateStoreProvider.scala" in sources.namelist()
    with zipfile.ZipFile(published("-javadoc.jar")) as javadoc:
        assert "index.html" in javadoc.namelist()


def test_the_pom_declares_only_what_spark_provides_and_what_maven_central_requires() -> None:
    pom = ET.parse(published(".pom")).getroot()

    def text(path: str) -> str:
        found = pom.find(path, POM_NS)
        return (found.text or "").strip() if found is not None else ""

    assert (text("m:groupId"), text("m:artifactId"), text("m:version")) == (GROUP, ARTIFACT, VERSION)
    for field in ("m:name", "m:description", "m:url", "m:licenses/m:license/m:name", "m:licenses/m:license/m:url",
                  "m:scm/m:url", "m:scm/m:connection", "m:developers/m:developer/m:name"):
        assert text(field), f"the POM lacks {field} (Maven Central requires it)"
    dependencies = {(d.findtext("m:groupId", namespaces=POM_NS), d.findtext("m:artifactId", namespaces=POM_NS)):
                    (d.findtext("m:version", namespaces=POM_NS), d.findtext("m:scope", namespaces=POM_NS))
                    for d in pom.findall("m:dependencies/m:dependency", POM_NS)}
    spark = ROW[1] if ROW[1] != "pyspark" else ROW[3]
    assert dependencies == {
        ("org.apache.spark", f"spark-sql_{SCALA}"): (spark, "provided"),
        ("org.apache.hadoop", "hadoop-client-api"): (ROW[7], "provided"),
        ("org.scala-lang", "scala-library"): (ROW[2], "provided"),
        ("org.rocksdb", "rocksdbjni"): (ROW[6], "provided"),
    }


# ---------------------------------------------------------------------------------------------
# spark-submit --packages, then spark.jars.packages


def expected_counts(names: List[str]) -> Dict[str, int]:
    """Every word's count over the input files so far: what the state must hold after each run."""
    return dict(Counter(word for name in names for word in FILES[name]))


def run_job(command: List[str], work: Path, what: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_HOME", "TXSTATE_SPARK_JAR")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    result = work / f"{what}.json"
    log = work / f"{what}.log"
    with log.open("w") as out:
        done = subprocess.run([*command, "--result", str(result)], stdout=out, stderr=subprocess.STDOUT, env=env,
                              cwd=str(work), timeout=JOB_TIMEOUT_S)
    if done.returncode != 0 or not result.is_file():
        pytest.fail(f"{what} exited {done.returncode}; log {log}:\n" + "\n".join(log.read_text().splitlines()[-40:]))
    return json.loads(result.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, dict]:
    published(".jar")
    work = tmp_path_factory.mktemp("maven-packages")
    inputs = work / "inputs"
    inputs.mkdir()
    for name, words in FILES.items():
        (inputs / name).write_text("\n".join(words) + "\n")
    common = ["--checkpoint", str(work / "checkpoint"), "--inputs", str(inputs)]
    spark_submit = Path(sys.executable).parent / "spark-submit"
    repository = MAVEN_REPO.as_uri()
    submit = run_job([str(spark_submit), "--master", "local[2]", "--packages", COORDINATES, "--repositories",
                      repository, "--conf", f"spark.jars.ivy={work / 'ivy-submit'}", str(JOB), "--how", "submit",
                      "--files", "a.txt,b.txt", *common], work, "spark-submit")
    session = run_job([sys.executable, str(JOB), "--how", "session", "--files", "c.txt", "--coordinates", COORDINATES,
                       "--repository", repository, "--ivy", str(work / "ivy-session"), *common], work, "session")
    return {"submit": submit, "session": session, "work": {"dir": str(work)}}


def check_resolved_alone(ivy: Path, report: dict) -> None:
    """Ivy fetched our jar from the repository and nothing else: no Provided dependency came along."""
    jars = sorted(p.name for p in (ivy / "jars").iterdir())
    assert jars == [f"{GROUP}_{ARTIFACT}-{VERSION}.jar"], f"--packages resolved {jars}"
    assert (ivy / "jars" / jars[0]).read_bytes() == BUILT_JAR.read_bytes()
    assert jars[0] in report["spark_jars"] and str(BUILT_JAR) not in report["spark_jars"], report["spark_jars"]
    modules = sorted(p.name for p in (ivy / "cache").iterdir() if p.is_dir())
    assert all(m == GROUP or m.startswith("org.apache.spark-spark-submit-parent") for m in modules), modules


def check_run(run: dict, names: List[str]) -> None:
    expected = expected_counts(names)
    new_words = set(FILES[names[-1]])
    assert run["counts"] == {w: expected[w] for w in new_words}, (
        f"after {names}: the run over {names[-1]} emitted {run['counts']}, the state should give "
        f"{ {w: expected[w] for w in new_words} }")
    last = run["operators"][-1]
    assert last["numRowsTotal"] == len(expected), last
    assert "txstateCommitLatencyMs" in last["customMetrics"], f"not txstate's store: {last['customMetrics']}"


def test_spark_submit_packages_runs_a_stateful_query_on_txstate_and_restarts_it_exactly(runs: Dict[str, dict]) -> None:
    report = runs["submit"]
    check_resolved_alone(Path(runs["work"]["dir"]) / "ivy-submit", report)
    check_run(report["runs"][0], ["a.txt"])
    check_run(report["runs"][1], ["a.txt", "b.txt"])
    assert report["plugins"] == "txstate.spark.TxStatePlugin"


def test_spark_jars_packages_in_a_pyspark_session_restarts_the_query_exactly(runs: Dict[str, dict]) -> None:
    report = runs["session"]
    check_resolved_alone(Path(runs["work"]["dir"]) / "ivy-session", report)
    check_run(report["runs"][0], ["a.txt", "b.txt", "c.txt"])
