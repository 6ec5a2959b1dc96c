"""A real HDFS for the tests and `make bench-dfs`: a NameNode and a DataNode (Hadoop's
MiniDFSCluster) in their own JVM, on loopback, started from the 4.3 line's test classes
(jvm/src/test/scala-spark-4.3/txstate/dfs/MiniDfsLauncher.scala).

The JVM's classpath is target/dfs-classpath.txt, written by `build/sbt spark43/Test/compile` (the
sbt task `dfsClasspath`). The launcher prints its hdfs:// and WebHDFS addresses, answers `counters`
with the NameNode's and DataNode's request and byte counters, and stops on `stop` or when our end of
its stdin closes (so it never outlives the test process).

`WebHdfsPath` lets the local-file helpers of streaming_harness (version_files, recorded_provider,
offset_log_times, ...) read a checkpoint on the cluster: it offers the part of pathlib.Path they
use, over the NameNode's WebHDFS REST interface; `str()` of it is the hdfs:// URI Spark writes to.
"""

from __future__ import annotations

import fnmatch
import json
import os
import queue
import shutil
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

REPO_ROOT = Path(__file__).resolve().parents[2]
CLASSPATH_FILE = REPO_ROOT / "target" / "dfs-classpath.txt"
LAUNCHER = "txstate.dfs.MiniDfsLauncher"
START_TIMEOUT_S = 120.0
JVM_FLAGS = ["-Xmx512m", "-XX:+IgnoreUnrecognizedVMOptions",
             "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
             "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED"]


class DfsUnavailable(RuntimeError):
    """The cluster could not be started (its classpath is missing, or the JVM failed)."""


def launcher_classpath() -> str:
    """The classpath of the launcher JVM, as `build/sbt spark43/Test/compile` wrote it."""
    if not CLASSPATH_FILE.is_file():
        raise DfsUnavailable(
            f"{CLASSPATH_FILE} is missing: it lists the 4.3 line's test classpath (with Hadoop's mini DFS "
            "cluster) that the HDFS tests start a NameNode from. Run `build/sbt spark43/Test/compile`.")
    classpath = CLASSPATH_FILE.read_text().strip()
    classes = Path(classpath.split(os.pathsep)[0])
    if not (classes / "txstate" / "dfs" / "MiniDfsLauncher.class").is_file():
        raise DfsUnavailable(f"{classes} holds no compiled txstate.dfs.MiniDfsLauncher: "
                             "run `build/sbt spark43/Test/compile`.")
    return classpath


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        raise DfsUnavailable("no java on PATH and no JAVA_HOME: the mini DFS cluster runs in a JVM")
    return java


class DfsCluster:
    """One running launcher JVM: its addresses, its counters, and `stop()`."""

    def __init__(self, process: subprocess.Popen[str], lines: "queue.Queue[str | None]", hdfs: str, web: str,
                 log_path: Path) -> None:
        self._process = process
        self._lines = lines
        self.hdfs = hdfs  # hdfs://127.0.0.1:<port>
        self.web = web  # http://127.0.0.1:<port> (the NameNode's WebHDFS)
        self.log_path = log_path

    @classmethod
    def start(cls, base_dir: Path) -> "DfsCluster":
        """Starts a NameNode and a DataNode over `base_dir` and waits until they serve."""
        base_dir.mkdir(parents=True, exist_ok=True)
        log_path = base_dir / "launcher.log"
        log: IO[str] = log_path.open("w")
        process = subprocess.Popen(
            [java_binary(), *JVM_FLAGS, "-cp", launcher_classpath(), LAUNCHER, str(base_dir / "cluster")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        log.close()
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        try:
            ready = _expect(lines, "TXSTATE_DFS_READY ", START_TIMEOUT_S)
        except DfsUnavailable as error:
            process.kill()
            process.wait(timeout=30)
            tail = log_path.read_text()[-4000:]
            raise DfsUnavailable(f"{error} (launcher log {log_path}):\n{tail}") from None
        hdfs, web = ready.split()
        return cls(process, lines, hdfs, web, log_path)

    def uri(self, path: str) -> str:
        """The hdfs:// URI of an absolute path on the cluster."""
        return self.hdfs + "/" + path.lstrip("/")

    def path(self, path: str) -> "WebHdfsPath":
        return WebHdfsPath(self.hdfs, self.web, path)

    def counters(self) -> dict[str, int]:
        """The NameNode's RPC calls by method (`rpc.<Method>`), its activity counters (`nn.<Name>`) and
        the DataNode's bytes and blocks (`dn.<Name>`), as they are now."""
        assert self._process.stdin is not None
        self._process.stdin.write("counters\n")
        self._process.stdin.flush()
        return json.loads(_expect(self._lines, "TXSTATE_DFS_COUNTERS ", 30.0))

    def stop(self) -> None:
        """Shuts the cluster down (kills the JVM if it does not stop in time)."""
        if self._process.poll() is None:
            try:
                assert self._process.stdin is not None
                self._process.stdin.write("stop\n")
                self._process.stdin.close()
                self._process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait(timeout=30)


def _pump(stream: IO[str] | None, lines: "queue.Queue[str | None]") -> None:
    assert stream is not None
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _expect(lines: "queue.Queue[str | None]", prefix: str, timeout_s: float) -> str:
    """The rest of the launcher's next line starting with `prefix`."""
    while True:
        try:
            line = lines.get(timeout=timeout_s)
        except queue.Empty:
            raise DfsUnavailable(f"the mini DFS launcher printed no '{prefix.strip()}' within {timeout_s:.0f} s")
        if line is None:
            raise DfsUnavailable(f"the mini DFS launcher exited before printing '{prefix.strip()}'")
        if line.startswith("TXSTATE_DFS_ERROR "):
            raise DfsUnavailable(line)
        if line.startswith(prefix):
            return line[len(prefix):]


@dataclass(frozen=True)
class WebHdfsStat:
    st_mtime: float
    st_size: int


class WebHdfsPath:
    """A path on the cluster (`hdfs`: hdfs://host:port, `web`: its NameNode's http://host:port)
    with the read side of pathlib.Path the test helpers use."""

    def __init__(self, hdfs: str, web: str, path: str) -> None:
        self._hdfs = hdfs
        self._web = web
        self._path = "/" + path.strip("/")

    def __truediv__(self, name: str) -> "WebHdfsPath":
        return WebHdfsPath(self._hdfs, self._web, self._path.rstrip("/") + "/" + str(name))

    def __str__(self) -> str:
        return self._hdfs + self._path

    def __repr__(self) -> str:
        return f"WebHdfsPath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WebHdfsPath) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: "WebHdfsPath") -> bool:
        return str(self) < str(other)

    @property
    def name(self) -> str:
        return self._path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> "WebHdfsPath":
        return WebHdfsPath(self._hdfs, self._web, self._path.rstrip("/").rsplit("/", 1)[0] or "/")

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in self._path.split("/") if p)

    def _call(self, op: str, **params: str) -> bytes:
        query = urllib.parse.urlencode({"op": op, "user.name": "txstate-tests", **params})
        url = f"{self._web}/webhdfs/v1{urllib.parse.quote(self._path)}?{query}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:  # OPEN follows the DataNode redirect
                return response.read()
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise FileNotFoundError(str(self)) from None
            raise

    def _status(self) -> dict:
        return json.loads(self._call("GETFILESTATUS"))["FileStatus"]

    def exists(self) -> bool:
        try:
            self._status()
            return True
        except FileNotFoundError:
            return False

    def is_dir(self) -> bool:
        try:
            return self._status()["type"] == "DIRECTORY"
        except FileNotFoundError:
            return False

    def is_file(self) -> bool:
        try:
            return self._status()["type"] == "FILE"
        except FileNotFoundError:
            return False

    def stat(self) -> WebHdfsStat:
        status = self._status()
        return WebHdfsStat(status["modificationTime"] / 1000.0, int(status["length"]))

    def iterdir(self) -> Iterator["WebHdfsPath"]:
        statuses = json.loads(self._call("LISTSTATUS"))["FileStatuses"]["FileStatus"]
        return iter([self / s["pathSuffix"] for s in statuses])

    def glob(self, pattern: str) -> Iterator["WebHdfsPath"]:
        return iter([p for p in self.iterdir() if fnmatch.fnmatch(p.name, pattern)])

    def rglob(self, pattern: str) -> Iterator["WebHdfsPath"]:
        found = []
        for child in self.iterdir():
            if fnmatch.fnmatch(child.name, pattern):
                found.append(child)
            if child.is_dir():
                found.extend(child.rglob(pattern))
        return iter(found)

    def read_text(self) -> str:
        return self._call("OPEN").decode("utf-8")
