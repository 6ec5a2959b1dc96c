"""A real S3-compatible server for the tests and `make bench-s3`: s3proxy (its own JVM, a filesystem
blob store, on loopback) behind a counting HTTP proxy (a thread of this process) that classifies
every request Hadoop's s3a connector sends and counts its bytes.

The jars come from `build/sbt s3/s3Classpath` (build.sbt, project `s3`): target/s3proxy-classpath.txt
for the server, target/s3a-classpath.txt (hadoop-aws at pyspark's Hadoop version and the AWS SDK
modules it uses) for Spark's driver and executors (`spark_settings`).

The server's JVM dies with this process (PR_SET_PDEATHSIG), and `stop()` ends it at teardown.

`S3Path` lets the local-file helpers of streaming_harness (version_files, list_checkpoint,
recorded_provider, ...) read a checkpoint in the bucket: the filesystem blob store keeps each object
as a file under its bucket's folder, so an S3Path reads those files, while `str()` of it is the
s3a:// URI Spark writes to.
"""

from __future__ import annotations

import ctypes
import http.client
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter, deque
from pathlib import Path
from typing import IO, Iterator

from servers.dfs_cluster import java_binary

REPO_ROOT = Path(__file__).resolve().parents[2]
S3A_CLASSPATH_FILE = REPO_ROOT / "target" / "s3a-classpath.txt"
SERVER_CLASSPATH_FILE = REPO_ROOT / "target" / "s3proxy-classpath.txt"
BUCKET = "txstate"
ACCESS_KEY = "txstate-tests"
SECRET_KEY = "txstate-tests-secret"
START_TIMEOUT_S = 120.0
# The request kinds S3 bills differently. A rename on S3 is a COPY and a DELETE; a multi-object
# delete (POST ?delete) counts as one DELETE request and its keys in `deleted_keys`.
KINDS = ("PUT", "COPY", "GET", "HEAD", "LIST", "DELETE", "OTHER")
RECENT_REQUESTS = 10_000  # the requests `S3Server.recent_requests` keeps, for tests that check their order


class S3Unavailable(RuntimeError):
    """The server could not be started (its jars are missing, or the JVM failed)."""


def _classpath(file: Path) -> str:
    if not file.is_file():
        raise S3Unavailable(
            f"{file} is missing: it lists the jars of the S3 tests (s3proxy, and hadoop-aws with the AWS SDK "
            "for Spark). Run `build/sbt s3/s3Classpath` (it downloads them from Maven Central once).")
    classpath = file.read_text().strip()
    missing = [jar for jar in classpath.split(os.pathsep) if not Path(jar).is_file()]
    if missing:
        raise S3Unavailable(f"{file} names jars that are gone ({missing[:3]}): run `build/sbt s3/s3Classpath`.")
    return classpath


def s3a_classpath() -> str:
    """hadoop-aws and the AWS SDK modules, for spark.driver/executor.extraClassPath."""
    return _classpath(S3A_CLASSPATH_FILE)


def s3a_spark_settings(endpoint: str) -> dict[str, str]:
    """What a Spark session needs to reach the server at `endpoint` (http://127.0.0.1:<port>) by s3a://:
    the connector on the driver's and executors' classpaths, path-style access, no TLS, static keys."""
    classpath = s3a_classpath()
    s3a = "spark.hadoop.fs.s3a."
    return {
        "spark.driver.extraClassPath": classpath,
        "spark.executor.extraClassPath": classpath,
        s3a + "endpoint": endpoint,
        s3a + "endpoint.region": "us-east-1",
        s3a + "path.style.access": "true",
        s3a + "connection.ssl.enabled": "false",
        s3a + "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        s3a + "access.key": ACCESS_KEY,
        s3a + "secret.key": SECRET_KEY,
        # A server that stopped answering fails a test in seconds, not after minutes of retries.
        s3a + "attempts.maximum": "2",
        s3a + "retry.limit": "2",
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the process that started it dies."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def classify(method: str, path: str, query: str, headers: http.client.HTTPMessage) -> str:
    """The S3 request kind of one HTTP request (path-style: /bucket or /bucket/key)."""
    params = urllib.parse.parse_qs(query, keep_blank_values=True)
    is_bucket = path.strip("/").count("/") == 0
    if method == "PUT":
        return "COPY" if "x-amz-copy-source" in headers else "PUT"
    if method == "GET":
        return "LIST" if is_bucket else "GET"
    if method == "HEAD":
        return "HEAD"
    if method == "DELETE" or (method == "POST" and "delete" in params):
        return "DELETE"
    return "OTHER"  # multipart upload starts and completions (POST ?uploads, ?uploadId)


class RequestCounts:
    """Requests, bytes sent to the server (`bytes_in`) and bytes it answered (`bytes_out`), by kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._recent: deque[tuple[str, str, int]] = deque(maxlen=RECENT_REQUESTS)

    def add(self, kind: str, path: str, status: int, sent: int, answered: int, deleted_keys: int) -> None:
        with self._lock:
            self._recent.append((kind, path, status))
            self._counts[f"requests.{kind}"] += 1
            self._counts[f"bytes_in.{kind}"] += sent
            self._counts[f"bytes_out.{kind}"] += answered
            self._counts["deleted_keys"] += deleted_keys

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def recent(self) -> list[tuple[str, str, int]]:
        """The last requests, oldest first: (kind, path and query, HTTP status)."""
        with self._lock:
            return list(self._recent)


class _CountingProxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, upstream_port: int, counts: RequestCounts) -> None:
        super().__init__(("127.0.0.1", port), _ForwardingHandler)
        self.upstream_port = upstream_port
        self.counts = counts

    def handle_error(self, request: object, client_address: object) -> None:
        # A killed executor drops its connections mid-request: that is the test, not a proxy error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _ForwardingHandler(http.server.BaseHTTPRequestHandler):
    """Forwards one request as it came (Host kept: it is signed) and counts it."""

    protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue answered here
    server: _CountingProxy

    def _forward(self) -> None:
        body = self._read_body()
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("expect", "transfer-encoding", "connection", "content-length")}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=120)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            answer = response.read()
            self.send_response_only(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() in ("transfer-encoding", "connection"):
                    continue
                if key.lower() == "content-length" and self.command != "HEAD":
                    continue
                self.send_header(key, value)
            if self.command != "HEAD":
                self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer)
        finally:
            upstream.close()
        path, _, query = self.path.partition("?")
        kind = classify(self.command, path, query, self.headers)
        deleted = body.count(b"<Key>") if self.command == "POST" and kind == "DELETE" else int(kind == "DELETE")
        self.server.counts.add(kind, self.path, response.status, len(body), len(answer), deleted)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


class S3Server:
    """A running s3proxy with the bucket `BUCKET`, reached through the counting proxy at `endpoint`."""

    def __init__(self, process: subprocess.Popen[bytes], proxy: _CountingProxy, blobs: Path, log_path: Path) -> None:
        self._process = process
        self._proxy = proxy
        self.blobs = blobs
        self.log_path = log_path
        self.endpoint = f"http://127.0.0.1:{proxy.server_address[1]}"

    @classmethod
    def start(cls, base_dir: Path) -> "S3Server":
        """Starts s3proxy over a filesystem blob store under `base_dir` and waits until it serves."""
        blobs = base_dir / "blobs"
        (blobs / BUCKET).mkdir(parents=True, exist_ok=True)  # a folder of the base dir is a bucket
        server_port = _free_port()
        properties = base_dir / "s3proxy.properties"
        properties.write_text("\n".join([
            f"s3proxy.endpoint=http://127.0.0.1:{server_port}",
            "s3proxy.authorization=aws-v2-or-v4",
            f"s3proxy.identity={ACCESS_KEY}",
            f"s3proxy.credential={SECRET_KEY}",
            "jclouds.provider=filesystem",
            f"jclouds.filesystem.basedir={blobs}",
            "",
        ]))
        log_path = base_dir / "s3proxy.log"
        log: IO[bytes] = log_path.open("wb")
        process = subprocess.Popen(
            [java_binary(), "-Xmx256m", "-cp", _classpath(SERVER_CLASSPATH_FILE), "org.gaul.s3proxy.Main",
             "--properties", str(properties)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(server_port):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait(timeout=30)
                raise S3Unavailable(f"s3proxy did not serve on 127.0.0.1:{server_port} (log {log_path}):\n"
                                    + log_path.read_text(errors="replace")[-4000:])
            time.sleep(0.2)
        proxy = _CountingProxy(_free_port(), server_port, RequestCounts())
        threading.Thread(target=proxy.serve_forever, name="s3-counting-proxy", daemon=True).start()
        return cls(process, proxy, blobs, log_path)

    def counters(self) -> dict[str, int]:
        """Requests and bytes by kind (`requests.PUT`, `bytes_in.PUT`, `bytes_out.GET`, ...) so far."""
        return self._proxy.counts.snapshot()

    def recent_requests(self) -> list[tuple[str, str, int]]:
        """The last requests the server answered, oldest first: (kind, path and query, HTTP status)."""
        return self._proxy.counts.recent()

    def uri(self, key: str) -> str:
        return f"s3a://{BUCKET}/{key.strip('/')}"

    def path(self, key: str) -> "S3Path":
        return S3Path(self.blobs / BUCKET, key.strip("/"))

    def spark_settings(self) -> dict[str, str]:
        """What a Spark session needs to write to this server through s3a://."""
        return s3a_spark_settings(self.endpoint)

    def stop(self) -> None:
        """Stops the proxy and the server (kills the JVM if it does not stop in time)."""
        self._proxy.shutdown()
        self._proxy.server_close()
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=30)


def _answers(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/")
        connection.getresponse().read()
        connection.close()
        return True
    except OSError:
        return False


class S3Path:
    """An object key (or key prefix) in the bucket, with the read side of pathlib.Path the test helpers
    use, read from the blob store's files; `str()` is its s3a:// URI."""

    def __init__(self, bucket_dir: Path, key: str) -> None:
        self._bucket_dir = bucket_dir
        self._key = key.strip("/")

    @property
    def local(self) -> Path:
        """The blob store's file (or folder) that holds this key."""
        return self._bucket_dir / self._key

    def __truediv__(self, name: str) -> "S3Path":
        return S3Path(self._bucket_dir, f"{self._key}/{name}")

    def __str__(self) -> str:
        return f"s3a://{BUCKET}/{self._key}"

    def __repr__(self) -> str:
        return f"S3Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, S3Path) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: "S3Path") -> bool:
        return str(self) < str(other)

    def _wrap(self, local: Path) -> "S3Path":
        return S3Path(self._bucket_dir, str(local.relative_to(self._bucket_dir)))

    @property
    def name(self) -> str:
        return self.local.name

    @property
    def parent(self) -> "S3Path":
        return self._wrap(self.local.parent)

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self._key.split("/"))

    def exists(self) -> bool:
        return self.local.exists()

    def is_dir(self) -> bool:
        return self.local.is_dir()

    def is_file(self) -> bool:
        return self.local.is_file()

    def stat(self) -> os.stat_result:
        return self.local.stat()

    def iterdir(self) -> Iterator["S3Path"]:
        return iter([self._wrap(p) for p in sorted(self.local.iterdir())])

    def glob(self, pattern: str) -> Iterator["S3Path"]:
        return iter([self._wrap(p) for p in sorted(self.local.glob(pattern))])

    def rglob(self, pattern: str) -> Iterator["S3Path"]:
        return iter([self._wrap(p) for p in sorted(self.local.rglob(pattern))])

    def read_text(self) -> str:
        return self.local.read_text()
