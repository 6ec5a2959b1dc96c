"""Packaging of txstate-spark: the Python helpers, the CLI, the wheel, and the jar inside it.

Real pyspark, real JVMs, real wheels; no mocks. Everything that imports pyspark or starts a JVM runs
in a child Python process, so these tests neither depend on nor disturb a Spark session that other
test modules may have started in the pytest process (a py4j JVM keeps its classpath for life).

Needs `make jar` and `make wheel` first (`make test` does both).
"""

import ast
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections import Counter
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON_SRC = REPO / "python"
if str(PYTHON_SRC) not in sys.path:
    sys.path.insert(0, str(PYTHON_SRC))

import txstate_spark  # noqa: E402
from txstate_spark import (  # noqa: E402
    KNOWN_SETTINGS,
    PLUGIN_CLASS,
    PROVIDER_CLASS,
    SETTINGS_PREFIX,
    submit_args,
)

VERSION = (REPO / "VERSION").read_text().strip()
# Every Spark line the build makes a jar for (the sbt build and the Makefile read the same table).
# Rows are Spark lines ("4.1"), or a line and Scala version where a line has jars for two ("3.5_2.12").
TABLE = [row.split() for row in (REPO / "project" / "spark-lines.tsv").read_text().splitlines()
         if row.strip() and not row.startswith("#")]
LINES = [row[0] for row in TABLE]
SCALA_OF = {row[0]: ".".join(row[2].split(".")[:2]) for row in TABLE}
# The jar of the Spark line this pytest runs on (CI runs these tests in one venv per line): the row
# of the installed pyspark's line that pyspark ships (the table's pyspark column is "-" for the other).
PYSPARK_LINE = ".".join(metadata.version("pyspark").split(".")[:2])
PYSPARK_ROW = next(row[0] for row in TABLE if row[0].split("_")[0] == PYSPARK_LINE and row[3] != "-")


def spark_line(row: str) -> str:
    """``3.5`` of ``3.5_2.12``."""
    return row.split("_")[0]


def jar_name(row: str) -> str:
    return f"txstate-spark-{spark_line(row)}_{SCALA_OF[row]}-{VERSION}.jar"


JAR_NAME = jar_name(PYSPARK_ROW)
JAR = REPO / "target" / JAR_NAME
WHEEL = REPO / "dist" / f"txstate_spark-{VERSION}-py3-none-any.whl"
PROVIDER_ENTRY = PROVIDER_CLASS.replace(".", "/") + ".class"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
CHILD_TIMEOUT_S = 180


# ---------------------------------------------------------------------------------------------
# helpers


def built_jar() -> Path:
    assert JAR.is_file(), f"{JAR} is missing: run `make jar` (make test builds it) before pytest"
    return JAR


def built_wheel() -> Path:
    assert WHEEL.is_file(), f"{WHEEL} is missing: run `make wheel` (make test builds it) before pytest"
    return WHEEL


def child_env(**overrides: Optional[str]) -> Dict[str, str]:
    """The environment of a child Python: the source package and the built jar, unless overridden."""
    env = dict(os.environ)
    env.update(PYTHONPATH=str(PYTHON_SRC), TXSTATE_SPARK_JAR=str(JAR), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE", "PYSPARK_GATEWAY_PORT",
                 "PYSPARK_SUBMIT_ARGS", "SPARK_HOME"):
        env.pop(name, None)
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(args: List[str], env: Dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                          cwd=str(REPO))
    if check and done.returncode != 0:
        pytest.fail(f"{shlex.join(args)} exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done


def run_script(script: str, env: Dict[str, str], python: str = sys.executable) -> Any:
    """Run a Python script in a child process; it must print one JSON document as its last line."""
    done = run([python, "-c", textwrap.dedent(script)], env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cli(*args: str, **env: Optional[str]) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "txstate_spark", *args], child_env(**env), check=False)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# one version string


def test_package_version_equals_the_version_file() -> None:
    assert txstate_spark.__version__ == VERSION, (
        f"python/txstate_spark/_version.py says {txstate_spark.__version__}, VERSION says {VERSION}"
    )


@pytest.mark.parametrize("row", LINES)
def test_every_class_of_a_jar_is_for_its_lines_java_release(row: str) -> None:
    """The table's release column is the oldest JDK the line runs on (8 for 3.5: Databricks LTS runs JDK
    8): every class file must be of that Java release (class file major version = release + 44)."""
    release = int(next(r for r in TABLE if r[0] == row)[5])
    jar = REPO / "target" / jar_name(row)
    assert jar.is_file(), f"{jar} is missing: run `make jar`"
    with zipfile.ZipFile(jar) as archive:
        versions = Counter(int.from_bytes(archive.read(n)[6:8], "big") for n in archive.namelist() if n.endswith(".class"))
    assert versions and set(versions) == {release + 44}, f"{jar.name}: class file versions {dict(versions)}"


def test_jar_and_wheel_carry_the_version_file_version() -> None:
    with zipfile.ZipFile(built_jar()) as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode()
    assert f"Implementation-Version: {VERSION}" in manifest
    with zipfile.ZipFile(built_wheel()) as wheel:
        metadata_name = f"txstate_spark-{VERSION}.dist-info/METADATA"
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
        version_py = wheel.read("txstate_spark/_version.py").decode()
    assert metadata["Version"] == VERSION
    assert metadata["Name"] == "txstate-spark"
    assert f'__version__ = "{VERSION}"' in version_py


# ---------------------------------------------------------------------------------------------
# the wheel


def test_wheel_bundles_every_lines_built_jar_and_typing_marker() -> None:
    with zipfile.ZipFile(built_wheel()) as wheel:
        names = set(wheel.namelist())
        bundled_jars = sorted(n for n in names if n.endswith(".jar"))
        assert bundled_jars == sorted(f"txstate_spark/jars/{jar_name(line)}" for line in LINES), (
            f"{WHEEL.name} must carry one jar per Spark line of project/spark-lines.tsv: {bundled_jars}")
        for line in LINES:
            built = REPO / "target" / jar_name(line)
            assert built.is_file(), f"{built} is missing: run `make jar`"
            assert sha256(wheel.read(f"txstate_spark/jars/{jar_name(line)}")) == sha256(built.read_bytes()), (
                f"the {line} jar in {WHEEL.name} differs from {built}: the wheel is stale, run `make wheel`")
    check_package_modules(names, WHEEL.name)


def check_package_modules(names: Set[str], wheel_name: str) -> None:
    """The wheel holds the package's modules and typing marker, and no demo."""
    for module in ("__init__", "__main__", "jar", "jvm_gateway", "session", "spark_line", "submit", "_version"):
        assert f"txstate_spark/{module}.py" in names
    assert "txstate_spark/py.typed" in names
    assert "txstate_spark/settings/settings.json" in names, f"{wheel_name} lacks the settings' specification"
    rooms = {
        "cli": ("__init__", "inspect", "jar", "migrate", "options", "serve", "verify"),
        "query": ("__init__", "bounds", "conversion", "gateway", "queries", "request", "results", "store"),
        "settings": ("__init__", "names", "spec", "values"),
    }
    for room, modules in rooms.items():
        for module in modules:
            assert f"txstate_spark/{room}/{module}.py" in names, f"the wheel lacks txstate_spark.{room}.{module}"
    demos = sorted(n for n in names if "demo" in n.lower())
    assert not demos, f"{wheel_name} ships the demo ({demos}): it belongs to the repository's demo/ folder"


def test_the_jar_and_the_wheel_carry_the_one_settings_specification() -> None:
    # One file in the repository (python/txstate_spark/settings/settings.json); the build copies it into each jar.
    spec = (PYTHON_SRC / "txstate_spark" / "settings" / "settings.json").read_bytes()
    with zipfile.ZipFile(built_wheel()) as wheel:
        assert wheel.read("txstate_spark/settings/settings.json") == spec, f"{WHEEL.name} is stale: run `make wheel`"
    for line in LINES:
        with zipfile.ZipFile(REPO / "target" / jar_name(line)) as jar:
            assert jar.read("txstate-settings.json") == spec, f"{jar_name(line)} is stale: run `make jar`"


def test_a_wheel_built_from_the_source_tree_has_no_demo(tmp_path: Path) -> None:
    # Built here, like `make wheel` but without the jar, from a copy of python/ (setuptools writes
    # build/ and *.egg-info next to the sources).
    source = tmp_path / "python"
    shutil.copytree(PYTHON_SRC, source, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "jars"))
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(source)], child_env())
    wheel, = (tmp_path / "dist").glob("txstate_spark-*.whl")
    with zipfile.ZipFile(wheel) as built:
        check_package_modules(set(built.namelist()), wheel.name)


def test_the_demo_runs_from_the_repository_as_make_demo_runs_it() -> None:
    makefile = (REPO / "Makefile").read_text().splitlines()
    recipe = makefile[next(i for i, line in enumerate(makefile) if line.startswith("demo: ")) + 1].strip()
    assert recipe.startswith("$(VPY) ") and recipe.endswith(".py $(DEMO_ARGS)"), recipe
    script = REPO / recipe[len("$(VPY) "):-len(" $(DEMO_ARGS)")]
    assert script.is_file() and PYTHON_SRC not in script.parents, f"make demo runs {script}"
    done = run([sys.executable, str(script), "--help"], child_env())
    assert all(flag in done.stdout for flag in ("--work-dir", "--metrics")) and "txstate provider" in done.stdout, \
        done.stdout


def test_pyspark_is_an_optional_extra_not_a_dependency() -> None:
    with zipfile.ZipFile(built_wheel()) as wheel:
        metadata = Parser().parsestr(wheel.read(f"txstate_spark-{VERSION}.dist-info/METADATA").decode())
    requires = metadata.get_all("Requires-Dist") or []
    assert requires == ['pyspark==4.3.0; extra == "pyspark"'], requires
    assert "pyspark" in (metadata.get_all("Provides-Extra") or [])


# ---------------------------------------------------------------------------------------------
# pyspark's public API only, but for the py4j gateway

#: The private pyspark names the package may use, for lack of a public equivalent in classic pyspark:
#: the py4j handles of the driver JVM, its session and a streaming query (``_jvm``, ``_jsparkSession``,
#: ``_jsq``) and the Java exception behind a converted error (``_origin``); whether the driver JVM was
#: launched (``SparkContext._gateway``, ``_ensure_initialized``, ``_active_spark_context``); and a
#: builder's settings before any session exists (``Builder._options``). Any other is a bug.
PY4J_GATEWAY_NAMES = {"_jvm", "_jsparkSession", "_jsq", "_origin", "_options", "_gateway",
                      "_ensure_initialized", "_active_spark_context"}


def private_pyspark_names(source: str) -> List[str]:
    """The private names ``source`` takes from pyspark: ``from pyspark... import _x``, ``T._x``
    where ``T`` came from pyspark, and ``getattr``/``hasattr`` with a ``"_x"`` name (not a dunder, nor
    namedtuple's public ``_asdict``)."""
    tree = ast.parse(source)
    imported: Set[str] = set()
    found: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyspark":
            imported.update(alias.asname or alias.name for alias in node.names)
            found += [alias.name for alias in node.names if alias.name.startswith("_")]
        elif isinstance(node, ast.Import):
            imported.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("pyspark"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imported
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and str(node.args[1].value).startswith("_") and not str(node.args[1].value).startswith("__")
              and node.args[1].value != "_asdict"):
            found.append(str(node.args[1].value))
    return found


def test_the_package_uses_no_private_pyspark_helper() -> None:
    assert private_pyspark_names("from pyspark.sql import types as T\nT._create_row(a, b)") == ["_create_row"]
    misuses = {}
    for path in sorted((PYTHON_SRC / "txstate_spark").rglob("*.py")):
        names = sorted(set(private_pyspark_names(path.read_text())) - PY4J_GATEWAY_NAMES)
        if names:
            misuses[str(path.relative_to(REPO))] = names
    assert not misuses, f"private pyspark names outside the py4j gateway (use the public API): {misuses}"


# ---------------------------------------------------------------------------------------------
# configure() on real builders, in a child process that never starts a JVM


@pytest.fixture(scope="module")
def builder_scenarios() -> Dict[str, Any]:
    built_jar()
    return run_script(
        """
        import json
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
        from txstate_spark import TxStateConfigurationError, configure

        def options(builder):
            return dict(builder._options)

        def error(make):
            try:
                make()
            except TxStateConfigurationError as e:
                return str(e)
            return None

        out = {}
        b = SparkSession.builder.master("local[1]")
        out["returned_same_builder"] = configure(b, block_cache_size_mb=32, writeBufferSizeMB=8,
                                                 local_dir="/tmp/txstate state") is b
        out["plain"] = options(b)
        out["kept"] = options(configure(SparkSession.builder.config("spark.jars", "/opt/a.jar,/opt/b.jar")
                                        .config("spark.plugins", "com.example.Theirs")))
        twice = configure(configure(SparkSession.builder))
        out["twice"] = options(twice)
        out["connect_builder"] = error(lambda: configure(SparkSession.builder.remote("sc://localhost:15002")))
        out["api_mode_connect"] = error(
            lambda: configure(SparkSession.builder.config("spark.api.mode", "connect")))
        out["jvm_started"] = SparkContext._gateway is not None
        print(json.dumps(out))
        """,
        child_env(),
    )


def test_configure_sets_jar_provider_and_txstate_settings_on_the_builder(builder_scenarios: Dict[str, Any]) -> None:
    assert builder_scenarios["returned_same_builder"] is True
    opts = builder_scenarios["plain"]
    assert opts["spark.jars"] == str(JAR)
    assert opts[PROVIDER_KEY] == PROVIDER_CLASS
    assert opts[SETTINGS_PREFIX + "blockCacheSizeMB"] == "32"
    assert opts[SETTINGS_PREFIX + "writeBufferSizeMB"] == "8"
    assert opts[SETTINGS_PREFIX + "localDir"] == "/tmp/txstate state"
    assert opts["spark.master"] == "local[1]"
    assert opts["spark.plugins"] == PLUGIN_CLASS
    assert builder_scenarios["jvm_started"] is False, "configure() must not start a JVM"


def test_configure_keeps_jars_already_on_the_builder(builder_scenarios: Dict[str, Any]) -> None:
    assert builder_scenarios["kept"]["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{JAR}"
    assert builder_scenarios["twice"]["spark.jars"] == str(JAR), "configuring twice must not add the jar twice"


def test_configure_appends_its_plugin_to_the_users_spark_plugins_once(builder_scenarios: Dict[str, Any]) -> None:
    assert builder_scenarios["kept"]["spark.plugins"] == f"com.example.Theirs,{PLUGIN_CLASS}"
    assert builder_scenarios["twice"]["spark.plugins"] == PLUGIN_CLASS, "configuring twice must not list it twice"


def test_configure_refuses_spark_connect_and_says_to_install_the_jar_on_the_server(
    builder_scenarios: Dict[str, Any],
) -> None:
    for case in ("connect_builder", "api_mode_connect"):
        message = builder_scenarios[case]
        assert message is not None, f"{case}: configure() accepted a Spark Connect builder"
        assert "Spark Connect" in message
        assert "cluster library" in message and "--jars" in message and "submit-args" in message


# ---------------------------------------------------------------------------------------------
# the command line


def test_cli_jar_prints_the_jar_path() -> None:
    done = cli("jar")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(built_jar())


def test_cli_submit_args_prints_shell_quoted_flags_on_one_line() -> None:
    built_jar()
    done = cli("submit-args", "--option", "max_write_buffer_number=4", "-o", "localDir=/tmp/state dir")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1
    assert shlex.split(done.stdout) == [
        "--jars", str(JAR),
        "--conf", f"spark.plugins={PLUGIN_CLASS}",
        "--conf", f"{PROVIDER_KEY}={PROVIDER_CLASS}",
        "--conf", f"{SETTINGS_PREFIX}maxWriteBufferNumber=4",
        "--conf", f"{SETTINGS_PREFIX}localDir=/tmp/state dir",
    ]


def test_submit_args_function_matches_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXSTATE_SPARK_JAR", str(built_jar()))
    done = cli("submit-args", "-o", "write_buffer_size_mb=32")
    assert shlex.split(done.stdout) == submit_args(write_buffer_size_mb=32)


def test_cli_errors_exit_non_zero_with_a_clear_message(tmp_path: Path) -> None:
    missing = cli("jar", TXSTATE_SPARK_JAR=str(tmp_path / "nope.jar"))
    assert missing.returncode != 0 and "TXSTATE_SPARK_JAR" in missing.stderr and "nope.jar" in missing.stderr
    bad_option = cli("submit-args", "-o", "no-equals-sign")
    assert bad_option.returncode != 0 and "NAME=VALUE" in bad_option.stderr
    bad_name = cli("submit-args", "-o", "bad-name=1")
    assert bad_name.returncode != 0 and "option name" in bad_name.stderr
    assert cli("--help").returncode == 0 and "submit-args" in cli("--help").stdout


def test_without_env_or_bundled_jar_the_error_says_how_to_get_one(tmp_path: Path) -> None:
    # A copy of the source package without a jars/ folder, as a checkout that never ran `make wheel`.
    shutil.copytree(PYTHON_SRC / "txstate_spark", tmp_path / "txstate_spark",
                    ignore=shutil.ignore_patterns("jars", "__pycache__"))
    done = run([sys.executable, "-m", "txstate_spark", "jar"],
               child_env(PYTHONPATH=str(tmp_path), TXSTATE_SPARK_JAR=None), check=False)
    assert done.returncode != 0
    assert "pip install" in done.stderr and "make jar" in done.stderr, done.stderr


# ---------------------------------------------------------------------------------------------
# configure() when the driver JVM is already running (a real local session)


def test_configure_refuses_when_a_spark_context_is_already_running() -> None:
    built_jar()
    result = run_script(
        """
        import json
        from pyspark.sql import SparkSession
        from txstate_spark import TxStateConfigurationError, configure

        def attempt():
            try:
                configure(SparkSession.builder, block_cache_size_mb=16)
            except TxStateConfigurationError as e:
                return str(e)
            return None

        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .getOrCreate())
        running = attempt()
        spark.stop()
        stopped = attempt()
        print(json.dumps({"running": running, "stopped": stopped}))
        """,
        child_env(),
    )
    running, stopped = result["running"], result["stopped"]
    assert running is not None, "configure() accepted a builder while a SparkContext without the jar runs"
    assert "SparkContext is already running" in running
    assert "spark.stop()" in running and "new Python process" in running
    assert f"--jars {JAR}" in running and f"--conf {PROVIDER_KEY}={PROVIDER_CLASS}" in running
    assert f"{SETTINGS_PREFIX}blockCacheSizeMB=16" in running
    assert "python -m txstate_spark submit-args" in running
    # Stopping the session does not help: the py4j JVM keeps the classpath it was launched with.
    assert stopped is not None and "already started" in stopped


# ---------------------------------------------------------------------------------------------
# the wheel installed into a fresh virtual environment


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, str]]:
    """The wheel, installed with --no-deps into a new venv that has no pyspark."""
    wheel = built_wheel()
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], child_env())
    python = str(venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", str(wheel)], child_env())
    env = child_env(PYTHONPATH=None, TXSTATE_SPARK_JAR=None)
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env)
    yield {"venv": str(venv), "python": python, "purelib": purelib.stdout.strip()}


def fake_spark_home(root: Path, version: str, scala: str = "2.13") -> Path:
    """A directory that says which Spark it is as a Spark distribution does: its RELEASE file, and
    the Scala version in the name of its spark-core jar."""
    home = root / f"spark-{version}"
    (home / "jars").mkdir(parents=True)
    (home / "RELEASE").write_text(f"Spark {version} built for Hadoop 3.4.1\n")
    (home / "jars" / f"spark-core_{scala}-{version}.jar").write_bytes(b"")
    return home


def test_installed_wheel_finds_its_bundled_jar_without_pyspark(
    installed_wheel: Dict[str, str], tmp_path: Path
) -> None:
    # No pyspark in that venv: $SPARK_HOME says which Spark will run.
    env = child_env(PYTHONPATH=None, TXSTATE_SPARK_JAR=None,
                    SPARK_HOME=str(fake_spark_home(tmp_path, metadata.version("pyspark"), SCALA_OF[PYSPARK_ROW])))
    found = run_script(
        """
        import importlib.util, json, os, txstate_spark
        print(json.dumps({"jar": txstate_spark.jar_path(), "package": txstate_spark.__file__,
                          "pyspark": importlib.util.find_spec("pyspark") is not None}))
        """,
        env,
        python=installed_wheel["python"],
    )
    assert found["pyspark"] is False, "the test venv must not have pyspark: it is only an extra"
    assert found["package"].startswith(installed_wheel["purelib"])
    assert found["jar"] == os.path.join(installed_wheel["purelib"], "txstate_spark", "jars", JAR_NAME)
    assert sha256(Path(found["jar"]).read_bytes()) == sha256(built_jar().read_bytes())
    flags = run([installed_wheel["python"], "-m", "txstate_spark", "submit-args"], env).stdout
    assert shlex.split(flags)[:2] == ["--jars", found["jar"]]


@pytest.mark.parametrize("line", LINES)
def test_installed_wheel_picks_each_lines_jar_by_spark_home_or_flag(
    installed_wheel: Dict[str, str], tmp_path: Path, line: str
) -> None:
    expected = os.path.join(installed_wheel["purelib"], "txstate_spark", "jars", jar_name(line))
    python = installed_wheel["python"]
    home = fake_spark_home(tmp_path, f"{spark_line(line)}.7", SCALA_OF[line])
    by_home = child_env(PYTHONPATH=None, TXSTATE_SPARK_JAR=None, SPARK_HOME=str(home))
    assert run([python, "-m", "txstate_spark", "jar"], by_home).stdout.strip() == expected
    plain = child_env(PYTHONPATH=None, TXSTATE_SPARK_JAR=None)
    by_flag = ["--spark", spark_line(line), "--scala", SCALA_OF[line]]
    assert run([python, "-m", "txstate_spark", "jar", *by_flag], plain).stdout.strip() == expected
    flags = run([python, "-m", "txstate_spark", "submit-args", "--spark", f"{spark_line(line)}.2", "--scala",
                 SCALA_OF[line]], plain).stdout
    assert shlex.split(flags)[:2] == ["--jars", expected]
    assert sha256(Path(expected).read_bytes()) == sha256((REPO / "target" / jar_name(line)).read_bytes())


def test_an_unsupported_or_unknown_spark_fails_naming_the_supported_lines(
    installed_wheel: Dict[str, str], tmp_path: Path
) -> None:
    python = installed_wheel["python"]
    plain = child_env(PYTHONPATH=None, TXSTATE_SPARK_JAR=None)
    # "3.5 (Scala 2.12, 2.13), 4.0, ...": each line once, its Scala versions named where not just 2.13
    scalas = {spark_line(row): sorted(SCALA_OF[r] for r in LINES if spark_line(r) == spark_line(row)) for row in LINES}
    supported = ", ".join(line if scalas[line] == ["2.13"] else f"{line} (Scala {', '.join(scalas[line])})"
                          for line in scalas)
    old = run([python, "-m", "txstate_spark", "jar", "--spark", "3.4.4"], plain, check=False)
    assert old.returncode != 0 and "Spark 3.4.4" in old.stderr and supported in old.stderr, old.stderr
    home = child_env(PYTHONPATH=None, TXSTATE_SPARK_JAR=None, SPARK_HOME=str(fake_spark_home(tmp_path, "9.1.0")))
    newer = run([python, "-m", "txstate_spark", "submit-args"], home, check=False)
    assert newer.returncode != 0 and "9.1.0" in newer.stderr and "SPARK_HOME" in newer.stderr, newer.stderr
    assert supported in newer.stderr
    # No pyspark in that venv and no $SPARK_HOME: nothing says which Spark will run.
    unknown = run([python, "-m", "txstate_spark", "jar"], plain, check=False)
    assert unknown.returncode != 0 and "--spark" in unknown.stderr and supported in unknown.stderr, unknown.stderr


def test_a_jar_built_for_another_line_is_refused_by_name(tmp_path: Path) -> None:
    other = next(line for line in LINES if spark_line(line) != PYSPARK_LINE)
    wrong = tmp_path / jar_name(other)
    shutil.copyfile(REPO / "target" / jar_name(other), wrong)
    done = cli("jar", TXSTATE_SPARK_JAR=str(wrong))
    assert done.returncode != 0, done.stdout
    assert f"built for Spark {spark_line(other)}" in done.stderr and JAR_NAME in done.stderr, done.stderr


@pytest.fixture(scope="module")
def session_from_installed_wheel(installed_wheel: Dict[str, str]) -> Dict[str, Any]:
    """A real local session built by configure() from the installed wheel (no $TXSTATE_SPARK_JAR)."""
    with zipfile.ZipFile(built_jar()) as jar:
        classes = sorted(n for n in jar.namelist() if n.endswith(".class") and "$" not in n)
    assert classes, f"{JAR} holds no classes"
    env = child_env(PYTHONPATH=installed_wheel["purelib"], TXSTATE_SPARK_JAR=None)
    script = """
        import json, os, sys
        from py4j.protocol import Py4JJavaError
        from pyspark.sql import SparkSession
        import txstate_spark

        spark = txstate_spark.configure(
            SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false"),
            max_write_buffer_number=4,
        ).getOrCreate()
        jvm = spark._jvm

        def loads(name):
            try:
                loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
                jvm.java.lang.Class.forName(name, True, loader)
                return "ok"
            except Py4JJavaError as e:
                return str(e.java_exception)

        out = {
            "package": txstate_spark.__file__,
            "jar": txstate_spark.jar_path(),
            "spark.jars": spark.sparkContext.getConf().get("spark.jars"),
            "provider": spark.conf.get("%(provider_key)s"),
            "buffers": spark.conf.get("%(prefix)smaxWriteBufferNumber"),
            "jar_class": loads(sys.argv[1]),
            "provider_class": loads("%(provider)s"),
        }
        if out["provider_class"] == "ok":
            # Keys with a placeholder (ttl.operator.<id>) are set per operator as Spark confs, not as options.
            out["jvm_settings"] = sorted(
                k for k in jvm.txstate.spark.TxStateConf.settings().keys().mkString("\\n").split("\\n") if "<" not in k
            )
        # The same jar at another path: spark.jars does not name it, only the class check can accept it.
        os.environ["TXSTATE_SPARK_JAR"] = sys.argv[2]
        try:
            again = txstate_spark.configure(SparkSession.builder, block_cache_size_mb=16).getOrCreate()
            out["reconfigured"] = again.conf.get("%(prefix)sblockCacheSizeMB")
        except txstate_spark.TxStateConfigurationError as e:
            out["reconfigured"] = "error: " + str(e)
        spark.stop()
        print(json.dumps(out))
    """ % {"provider_key": PROVIDER_KEY, "prefix": SETTINGS_PREFIX, "provider": PROVIDER_CLASS}
    some_class = classes[0][: -len(".class")].replace("/", ".")
    done = run([sys.executable, "-c", textwrap.dedent(script), some_class, str(built_jar())], env)
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["some_class"] = some_class
    result["jar_has_provider"] = PROVIDER_ENTRY in classes
    return result


def test_configure_from_the_installed_wheel_puts_its_jar_on_the_driver_classpath(
    installed_wheel: Dict[str, str], session_from_installed_wheel: Dict[str, Any]
) -> None:
    result = session_from_installed_wheel
    assert result["package"].startswith(installed_wheel["purelib"])
    assert result["jar"].startswith(installed_wheel["purelib"])
    assert result["spark.jars"] == result["jar"]
    assert result["provider"] == PROVIDER_CLASS
    assert result["buffers"] == "4"
    assert result["jar_class"] == "ok", f"{result['some_class']} did not load: {result['jar_class']}"


def test_the_jvm_loads_the_provider_class_from_the_installed_wheel(
    session_from_installed_wheel: Dict[str, Any],
) -> None:
    result = session_from_installed_wheel
    if not result["jar_has_provider"]:
        pytest.skip(f"{PROVIDER_ENTRY} is not in {JAR_NAME} yet (the provider is being written); "
                    f"this check switches on by itself once `make jar` packages it")
    assert result["provider_class"] == "ok", result["provider_class"]


def test_python_knows_exactly_the_settings_the_jar_defines(session_from_installed_wheel: Dict[str, Any]) -> None:
    result = session_from_installed_wheel
    if not result["jar_has_provider"]:
        pytest.skip(f"{PROVIDER_ENTRY} is not in {JAR_NAME} yet, so neither is TxStateConf")
    assert sorted(KNOWN_SETTINGS) == result["jvm_settings"], (
        "python/txstate_spark/settings/names.py KNOWN_SETTINGS differs from TxStateConf.settings in the jar: "
        "update KNOWN_SETTINGS, conf/spark-defaults.conf.example and docs/reference/settings.md together"
    )


def test_configure_accepts_a_running_jvm_that_already_loads_the_provider(
    session_from_installed_wheel: Dict[str, Any],
) -> None:
    result = session_from_installed_wheel
    if not result["jar_has_provider"]:
        pytest.skip(f"{PROVIDER_ENTRY} is not in {JAR_NAME} yet")
    # e.g. the jar installed as a cluster library: configure() only sets the settings on the live session
    assert result["reconfigured"] == "16", result["reconfigured"]


def test_configure_from_the_installed_wheel_runs_a_stateful_query_with_exact_counts(
    installed_wheel: Dict[str, str], tmp_path: Path
) -> None:
    # What a user does: the wheel installed, configure(), a stateful query. Runs on every Spark line
    # CI tests (each in its own venv), so the wheel's jar choice is checked against a real Spark.
    words = [f"w{(i * 7) % 13}" for i in range(500)]
    source = tmp_path / "input"
    source.mkdir()
    for part in range(3):
        (source / f"part-{part}.txt").write_text("\n".join(words[part::3]) + "\n")
    env = child_env(PYTHONPATH=installed_wheel["purelib"], TXSTATE_SPARK_JAR=None)
    result = run_script(
        """
        import json, sys
        from pyspark.sql import SparkSession
        import txstate_spark

        spark = txstate_spark.configure(
            SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
        counts = (spark.readStream.format("text").option("maxFilesPerTrigger", 1).load(sys.argv[1])
                  .groupBy("value").count())
        query = (counts.writeStream.format("memory").queryName("counts").outputMode("complete")
                 .option("checkpointLocation", sys.argv[2]).trigger(availableNow=True).start())
        query.awaitTermination()
        metrics = query.lastProgress["stateOperators"][0]["customMetrics"]
        print(json.dumps({
            "jar": txstate_spark.jar_path(),
            "counts": {r["value"]: r["count"] for r in spark.table("counts").collect()},
            "batches": len(query.recentProgress),
            "txstate_metrics": sorted(k for k in metrics if k.startswith("txstate")),
        }))
        spark.stop()
        """.replace("sys.argv[1]", repr(str(source))).replace("sys.argv[2]", repr(str(tmp_path / "checkpoint"))),
        env,
    )
    assert result["jar"] == os.path.join(installed_wheel["purelib"], "txstate_spark", "jars", JAR_NAME)
    expected: Dict[str, int] = {}
    for word in words:
        expected[word] = expected.get(word, 0) + 1
    assert result["counts"] == expected
    assert result["batches"] >= 3, "one batch per file: the state must carry across batches"
    assert "txstateCommitLatencyMs" in result["txstate_metrics"], result["txstate_metrics"]
