"""txstate's own `python -m txstate_spark serve` as a real process, on loopback, for tests/test_serving.py.

`Server` starts one in its own process group (so `stop()` reaches the JVM it becomes), waits for its
"listening on" line, and speaks HTTP(S) to it; its stderr goes to a file in the test's directory.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parents[1]


class Server:
    """One `python -m txstate_spark serve` process, in its own process group."""

    def __init__(self, plugin_jar: Path, log_dir: Path, checkpoint: Path, *args: str,
                 env: dict[str, str] | None = None) -> None:
        self.stderr_path = log_dir / f"serve-{time.monotonic_ns()}.err"
        self._stderr = self.stderr_path.open("w")
        full_env = {key: value for key, value in os.environ.items() if not key.startswith("TXSTATE_SERVE_")}
        full_env.update({"TXSTATE_SPARK_JAR": str(plugin_jar), **(env or {}),
                         "PYTHONPATH": os.pathsep.join([str(TESTS_DIR.parent / "python"),
                                                        os.environ.get("PYTHONPATH", "")])})
        operator = [] if "--operator" in args else ["--operator", "0"]
        command = [sys.executable, "-m", "txstate_spark", "serve", str(checkpoint), *operator, *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr, env=full_env,
                                        start_new_session=True, text=True)
        self.stdout_lines: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self.url = ""
        self.context: ssl.SSLContext | None = None

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout_lines.append(line)
            if "listening on" in line:
                self._ready.set()

    def wait_ready(self, timeout_s: float = 90) -> "Server":
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.2):
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the server did not start within {timeout_s:.0f} s: {self.output()}")
        line = next(l for l in self.stdout_lines if "listening on" in l)
        self.url = line.split("listening on", 1)[1].strip()
        return self

    def exit_code(self, timeout_s: float = 90) -> int:
        return self.process.wait(timeout=timeout_s)

    def output(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return "".join(self.stdout_lines) + self.stderr_path.read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        if not self._stderr.closed:
            self._stderr.close()

    # ---- HTTP ----------------------------------------------------------------------------------

    def connection(self) -> http.client.HTTPConnection:
        host_port = self.url.split("://", 1)[1]
        host, port = host_port.rsplit(":", 1)
        if self.url.startswith("https"):
            return http.client.HTTPSConnection(host, int(port), timeout=30, context=self.context)
        return http.client.HTTPConnection(host, int(port), timeout=30)

    def request(self, method: str, path: str, body: bytes | str | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        connection = self.connection()
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode("utf-8")
        finally:
            connection.close()

    def query(self, query: dict[str, Any], headers: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
        status, _, body = self.request("POST", "/v1/query", json.dumps({"query": query, **fields}), headers)
        assert status == 200, f"{query}: HTTP {status}: {body}"
        return json.loads(body)

    def health(self) -> tuple[int, dict[str, Any]]:
        status, _, body = self.request("GET", "/health")
        return status, json.loads(body)
