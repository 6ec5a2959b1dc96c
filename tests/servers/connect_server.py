"""A real local Spark Connect server in its own process, for tests that drive Spark through Connect.

Why a separate process: a Connect client and a classic (py4j) session must not share a Python
process. The pytest process usually holds the classic `spark` fixture, so the server runs from
pyspark's own `bin/spark-submit` as a child process group, and Connect client code runs in a fresh
interpreter too (`run_client`). This module never creates a SparkSession itself.

    with ConnectServer(jar, tmp_dir, conf={"spark.sql.shuffle.partitions": "2"}) as server:
        result = run_client(server.url, "import os; ...")

Readiness: the port accepts TCP connections and the server's log holds the line
`SparkConnectServer` writes (at INFO) once the gRPC service is bound:
    "Spark Connect server started at: 127.0.0.1:<port>"
The port is read back from that line, so the URL stays right even if the server had to move on to
another port because the one picked here was taken in the meantime.

Cleanup: the server runs in a new session (process group), so stop() reaches the JVM and any Python
workers it forked (SIGTERM, then SIGKILL after 20 s). Being in its own session also means a Ctrl-C
in the terminal does not reach it, hence the atexit stop. Only a SIGKILL of the Python process that
started it can leave it behind.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Mapping

REPO_ROOT = Path(__file__).resolve().parents[2]

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# What SparkConnectServer logs (INFO, logger SparkConnectServer) right after the gRPC server bound.
READY_PATTERN = re.compile(r"Spark Connect server started at: (?:\[[^\]]*\]|[^\s:\"]+):(\d+)")
LOOPBACK = "127.0.0.1"
STOP_GRACE_S = 20.0
LOG_TAIL_LINES = 60

_NO_CONF: Mapping[str, str] = MappingProxyType({})


def spark_home() -> Path:
    """The installed pyspark package's directory. It ships bin/spark-submit and jars/, including
    spark-connect_2.13-<version>.jar, so the server class needs nothing beyond that classpath."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_loopback_port() -> int:
    """A port nobody listens on right now. Another process may take it before the server binds;
    the server then tries the next ones (we set spark.connect.grpc.port.maxRetries) and start()
    reads the port it got from the readiness line."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _accepts_tcp(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0):
            return True
    except OSError:
        return False


class ConnectServer:
    """A Spark Connect server (classic local Spark with our jar) in a child process group."""

    def __init__(
        self,
        jar: str | os.PathLike[str],
        workdir: Path,
        conf: Mapping[str, str] = _NO_CONF,
        master: str = "local[2]",
    ) -> None:
        self.jar = Path(jar).resolve()
        self.workdir = Path(workdir).resolve()
        self.conf = dict(conf)
        self.master = master
        self.log_path = self.workdir / "connect-server.log"
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None  # seconds from launch to ready, for reports

    @property
    def url(self) -> str:
        """The client URL, e.g. sc://127.0.0.1:15002 (known once start() returned)."""
        if self._port is None:
            raise RuntimeError("the Connect server has not been started")
        return f"sc://{LOOPBACK}:{self._port}"

    def log_text(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _command(self, port: int) -> list[str]:
        settings = {
            # Loopback only: the gRPC endpoint, the driver's RPC and block manager.
            "spark.connect.grpc.binding.address": LOOPBACK,
            "spark.connect.grpc.binding.port": str(port),
            # The port was free a moment ago; should another process take it first, move on to the
            # next ones (Spark's default is 0 retries: exit) and report the real one in the log.
            "spark.connect.grpc.port.maxRetries": "16",
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            # The server is a classic Spark app; never let a stray setting turn it into a client.
            "spark.api.mode": "classic",
            **self.conf,
        }
        command = [
            str(spark_home() / "bin" / "spark-submit"),
            "--class", SERVER_CLASS,
            "--name", "txstate-spark test Connect server",
            "--master", self.master,
            "--jars", str(self.jar),
        ]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        return command

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        # spark-submit must be pyspark's, whatever SPARK_HOME a developer has exported.
        env["SPARK_HOME"] = str(spark_home())
        # An empty conf dir: no developer spark-defaults.conf, spark-env.sh or log4j2.properties
        # (one at WARN would hide the readiness line; Spark's default logs INFO to stderr).
        conf_dir = self.workdir / "spark-conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        env["SPARK_CONF_DIR"] = str(conf_dir)
        env["SPARK_LOCAL_IP"] = LOOPBACK
        # With SPARK_REMOTE set (or SPARK_CONNECT_MODE=1) the launcher would start a Connect client,
        # not a server; sbin/start-connect-server.sh sets SPARK_CONNECT_MODE=0 for the same reason.
        for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE"):
            env.pop(name, None)
        env["SPARK_CONNECT_MODE"] = "0"
        # Python workers (pandas UDFs, applyInPandasWithState) must run an interpreter with
        # pandas/pyarrow and the client's Python version: this one.
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        return env

    def start(self, timeout_s: float = 120) -> None:
        """Start the server and return once a client can connect. RuntimeError (with the log's
        tail) when it exits early or is not ready within timeout_s; nothing is left running then."""
        if self._proc is not None:
            raise RuntimeError("the Connect server is already started")
        if not self.jar.is_file():
            raise FileNotFoundError(f"jar for the Connect server not found: {self.jar}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        requested = free_loopback_port()
        began = time.monotonic()
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(
                self._command(requested),
                cwd=self.workdir,  # spark-warehouse/, metastore_db/ and friends land here
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, for stop()
            )
        atexit.register(self.stop)
        try:
            self._port = self._wait_ready(began + timeout_s)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - began

    def _wait_ready(self, deadline: float) -> int:
        assert self._proc is not None
        while True:
            match = READY_PATTERN.search(self.log_text())
            if match and _accepts_tcp(int(match.group(1))):
                return int(match.group(1))
            code = self._proc.poll()
            if code is not None:
                raise RuntimeError(
                    f"Spark Connect server exited with code {code} before it was ready:\n"
                    + self._log_tail()
                )
            if time.monotonic() > deadline:
                raise RuntimeError("Spark Connect server not ready in time:\n" + self._log_tail())
            time.sleep(0.25)

    def _log_tail(self) -> str:
        lines = self.log_text().splitlines()[-LOG_TAIL_LINES:]
        return f"--- last {len(lines)} lines of {self.log_path} ---\n" + "\n".join(lines)

    def stop(self) -> None:
        """Stop the server's whole process group: SIGTERM (Spark's shutdown hooks stop the
        SparkContext), then SIGKILL after STOP_GRACE_S. Idempotent."""
        proc, self._proc = self._proc, None
        atexit.unregister(self.stop)
        if proc is None:
            return
        group = proc.pid  # start_new_session: the leader's pid is the group id
        _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while not _exited_unreaped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        # The leader is exited but not reaped yet (or still running), so the group id cannot have
        # been reused: this only reaches the server and workers it forked that outlived it.
        _signal_group(group, signal.SIGKILL)
        proc.wait()
        # bin/spark-class execs java without waiting for its `< <(...)` subshell, so java inherits
        # that subshell as a zombie it never reaps; when java exits it goes to init, which may take
        # a moment to reap it. Wait a little for that (signal 0 only probes), so callers checking
        # for leftovers see an empty group; an init that never reaps costs only this bounded wait.
        drained_by = time.monotonic() + 3.0
        while _group_alive(group) and time.monotonic() < drained_by:
            time.sleep(0.05)

    def __enter__(self) -> ConnectServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _signal_group(group: int, sig: signal.Signals) -> None:
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _exited_unreaped(pid: int) -> bool:
    """Whether the child has exited, without reaping it (WNOWAIT keeps it a zombie)."""
    try:
        result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return result is not None


# Runs the client script (argv[1]) as __main__ but with a __file__. pyspark's Connect import check
# (pyspark.sql.connect.utils.check_dependencies) takes a __main__ without __file__ or __spec__,
# which is what a bare `python -c script` gives, for a doctest run: with grpcio & co. missing it
# prints "Skipping doctests" and exits 0 instead of raising. compile() keeps a leading
# `from __future__` legal and the script's own line numbers in tracebacks.
_CLIENT_BOOTSTRAP = (
    "import sys\n"
    "__file__ = '<run_client script>'\n"
    "exec(compile(sys.argv.pop(1), __file__, 'exec'))\n"
)


def run_client(url: str, script: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `script` in a fresh interpreter (`sys.executable -c`) with SPARK_CONNECT_URL=url and the
    repo's python/ on PYTHONPATH, capturing its output as text. A fresh process because a Connect
    client must never share one with a classic session. Raises subprocess.TimeoutExpired (after
    killing it) on timeout."""
    env = dict(os.environ)
    env["SPARK_CONNECT_URL"] = url
    inherited = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "python"), *inherited])
    return subprocess.run(
        [sys.executable, "-c", _CLIENT_BOOTSTRAP, script],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
