"""Serving state over HTTP: `python -m txstate_spark serve` as a real process (docs/serving.md).

Every server here is a separate process (``python -m txstate_spark serve``, which becomes a JVM)
on loopback, following a checkpoint written by a real counting stream in this test session. Its
answers are checked against `expected_counter(key, batch)`: the exact state after the batch the
answer's position names, so a torn or mislabelled batch fails.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.counting_stream import KEYS, check_counter, expected_counter, start_counting_stream, wait_until
from servers.txstate_serve import Server

TESTS_DIR = Path(__file__).resolve().parent
TOKEN = "s3rve-t0ken-" + "x7Qp2" * 6  # long and unusual, so finding it in a log is no accident
STACK_MARKERS = ("at txstate.", "Exception in", "\tat ", "at java.", "at org.apache")


def last_batch(checkpoint: Path) -> int:
    """The newest batch in the query's commit log (-1: none); older entries are cleaned up."""
    commits = checkpoint / "commits"
    names = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    return max(names, default=-1)


@pytest.fixture
def servers(plugin_jar, tmp_path):
    """Starts servers for one test and stops (then kills) every one of them afterwards."""
    started: list[Server] = []

    def start(checkpoint: Path, *args: str, env: dict[str, str] | None = None, ready: bool = True) -> Server:
        server = Server(plugin_jar, tmp_path, checkpoint, *args, env=env)
        started.append(server)
        return server.wait_ready() if ready else server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def stopped_checkpoint(spark, tmp_path_factory) -> Path:
    """The checkpoint of a counting stream that committed a few batches and stopped."""
    checkpoint = tmp_path_factory.mktemp("serve-static") / "ck"
    query = start_counting_stream(spark, checkpoint, "serve_static", trigger_ms=200)
    try:
        wait_until(lambda: last_batch(checkpoint) >= 3, 120, "three batches committed", query)
    finally:
        query.stop()
    return checkpoint


# ------------------------------------------------------------------------------------------------
# Exactness while the leader runs


class Positions:
    """Per-partition batches seen so far: they must never go backwards."""

    def __init__(self) -> None:
        self.newest: dict[int, int] = {}
        self.seen: set[int] = set()

    def partition_batches(self, response: dict[str, Any], context: str) -> dict[int, int]:
        batches = {}
        for result in response["partitions"]:
            assert result["success"], f"{context}: partition {result['partition']} failed: {result}"
            p, batch = result["partition"], result["position"]["batchId"]
            assert batch >= self.newest.get(p, -1), (
                f"{context}: partition {p} answered batch {batch} after batch {self.newest[p]}")
            self.newest[p] = batch
            self.seen.add(batch)
            batches[p] = batch
        return batches


def check_rows(response: dict[str, Any], positions: Positions, context: str) -> list[int]:
    """Checks every row of a paged answer against its partition's batch; returns the keys."""
    batches = positions.partition_batches(response, context)
    keys = []
    for result in response["partitions"]:
        for row in result["result"]["rows"]:
            key = row["key"][0]
            check_counter(row["value"], key, batches[result["partition"]], f"{context} (partition {result['partition']})")
            keys.append(key)
    return keys


def check_every_query_type(server: Server, positions: Positions, round_no: int) -> None:
    key = round_no % KEYS
    # key: a found key answers from the one partition that holds it
    response = server.query({"type": "key", "key": [key]})
    batches = positions.partition_batches(response, "key")
    found = [r for r in response["partitions"] if r["result"] is not None]
    assert len(found) == 1, f"key {key}: expected one partition with the value, got {response}"
    check_counter(found[0]["result"], key, batches[found[0]["partition"]], "key query")

    # multiKey: every key's value from the partition holding it, at that partition's batch
    keys = list(range(KEYS))
    response = server.query({"type": "multiKey", "keys": [[k] for k in keys]})
    batches = positions.partition_batches(response, "multiKey")
    for i, k in enumerate(keys):
        holders = [r for r in response["partitions"] if r["result"][i] is not None]
        assert len(holders) == 1, f"multiKey: key {k} held by {len(holders)} partitions: {response}"
        check_counter(holders[0]["result"][i], k, batches[holders[0]["partition"]], "multiKey query")

    # range: inclusive bounds, every key in them
    lower, upper = 2, 7
    response = server.query({"type": "range", "lower": [lower], "upper": [upper], "limit": 100})
    assert sorted(check_rows(response, positions, "range")) == list(range(lower, upper + 1))

    # prefix of the one key column: that key
    response = server.query({"type": "prefix", "prefix": [key], "limit": 10})
    assert check_rows(response, positions, "prefix") == [key]

    # scan, three rows per partition per page, following the continuation to the end
    seen: list[int] = []
    continuation = None
    for _ in range(KEYS + 2):
        response = server.query({"type": "scan", "limit": 3, "continuation": continuation})
        seen += check_rows(response, positions, "scan page")
        continuation = response["continuation"]
        if continuation is None:
            break
    assert sorted(seen) == list(range(KEYS)), f"paged scan: every key exactly once, got {sorted(seen)}"


def test_a_served_follower_answers_every_query_type_exactly_while_the_leader_runs_and_catches_up_when_it_stops(
        spark, servers, tmp_path):
    checkpoint = tmp_path / "leader"
    leader = start_counting_stream(spark, checkpoint, "serve_leader", trigger_ms=300)
    try:
        wait_until(lambda: last_batch(checkpoint) >= 0, 120, "the leader's first commit", leader)
        server = servers(checkpoint, "--port", "0", "--poll-interval-ms", "50")
        positions = Positions()
        rounds = 0
        # Ten leader batches from when the server answers, at least 30 in all: on a loaded machine the
        # server's JVM can take as long to start as the leader takes to run 30 batches.
        target = max(30, last_batch(checkpoint) + 10)
        deadline = time.monotonic() + 150
        while last_batch(checkpoint) < target:
            assert time.monotonic() < deadline, f"the leader reached batch {last_batch(checkpoint)}, not {target}, in time"
            assert leader.exception() is None, f"the leader failed: {leader.exception()}"
            check_every_query_type(server, positions, rounds)
            rounds += 1
        assert len(positions.seen) >= 3, f"the answers should follow the leader, saw batches {sorted(positions.seen)}"
    finally:
        leader.stop()
    final = last_batch(checkpoint)
    assert final >= 30

    def caught_up():
        status, health = server.health()
        return status == 200 and health["lag"]["batches"] == 0 and health["lag"]["appliedBatch"] == final

    wait_until(caught_up, 60, f"the follower at the leader's last batch {final} with no lag")
    metrics = metric_values(server.request("GET", "/metrics")[2])
    assert metrics["txstate_follower_lag_batches"] == 0
    assert metrics["txstate_follower_applied_batch"] == final
    assert metrics["txstate_follower_leader_batch"] == final

    response = server.query({"type": "scan", "limit": 100})
    assert all(r["position"]["batchId"] == final for r in response["partitions"])
    assert sorted(check_rows(response, Positions(), "final scan")) == list(range(KEYS))
    for key in range(KEYS):
        response = server.query({"type": "key", "key": [key]})
        (value,) = [r["result"] for r in response["partitions"] if r["result"] is not None]
        assert tuple(value) == expected_counter(key, final), f"key {key} after the leader stopped"


def metric_values(text: str) -> dict[str, float]:
    """Unlabelled samples of a Prometheus text page; HELP and TYPE lines come before each metric."""
    values, described = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            described.add(line.split()[2])
        elif line and not line.startswith("#") and "{" not in line:
            name, value = line.split()
            assert name in described, f"metric {name} has no TYPE line"
            values[name] = float(value)
    return values


# ------------------------------------------------------------------------------------------------
# Authentication and TLS


def test_a_server_off_loopback_refuses_to_start_without_a_token(servers, stopped_checkpoint):
    server = servers(stopped_checkpoint, "--host", "0.0.0.0", "--port", "0", ready=False)
    assert server.exit_code() == 2
    output = server.output()
    assert "TXSTATE_SERVE_TOKEN_REQUIRED" in output and "--token-file" in output, output
    assert "listening on" not in output


def test_a_bad_argument_or_an_unknown_operator_exits_with_status_2_naming_it(servers, stopped_checkpoint, tmp_path):
    cases = [
        ((stopped_checkpoint, "--operator", "7"), "TXSTATE_QUERY_UNKNOWN_OPERATOR"),
        ((tmp_path / "nothing-here", "--operator", "0"), "TXSTATE_QUERY_UNKNOWN_CHECKPOINT"),
        # A setting is checked before the JVM starts (the specification both halves read), naming the closest one.
        ((stopped_checkpoint, "--operator", "0", "--conf", "spark.sql.streaming.stateStore.txstate.cacheMB=1"),
         "Unknown txstate option 'spark.sql.streaming.stateStore.txstate.cacheMB'. Did you mean"),
        ((stopped_checkpoint, "--operator", "0", "--conf", "spark.sql.streaming.stateStore.txstate.ttl=7 days"),
         "spark.sql.streaming.stateStore.txstate.ttl must be a duration"),
    ]
    for (checkpoint, *args), words in cases:
        server = servers(checkpoint, *args, "--port", "0", ready=False)
        assert server.exit_code() == 2, f"{args}: {server.output()}"
        assert words in server.output() and "\tat " not in server.output(), f"{args}: {server.output()}"


def test_with_a_token_every_endpoint_but_health_needs_it_and_the_token_is_never_logged(servers, stopped_checkpoint):
    server = servers(stopped_checkpoint, "--port", "0", env={"TXSTATE_SERVE_TOKEN": TOKEN})
    right = {"Authorization": f"Bearer {TOKEN}"}
    body = json.dumps({"query": {"type": "key", "key": [1]}})
    for headers in ({}, {"Authorization": "Bearer wrong-" + TOKEN}, {"Authorization": TOKEN},
                    {"Authorization": f"Basic {TOKEN}"}):
        for method, path, payload in (("POST", "/v1/query", body), ("GET", "/v1/describe", None),
                                      ("GET", "/metrics", None), ("GET", "/no-such-path", None)):
            status, response_headers, text = server.request(method, path, payload, headers)
            assert status == 401, f"{method} {path} with {list(headers)}: HTTP {status}"
            assert response_headers.get("www-authenticate", "").startswith("Bearer"), response_headers
            assert TOKEN not in text
    assert server.request("GET", "/health")[0] == 200
    status, _, text = server.request("POST", "/v1/query", body, right)
    assert status == 200, text
    value = [r for r in json.loads(text)["partitions"] if r["result"] is not None][0]
    check_counter(value["result"], 1, value["position"]["batchId"], "an authorized key query")
    assert server.request("GET", "/v1/describe", headers=right)[0] == 200
    assert server.request("GET", "/metrics", headers=right)[0] == 200
    server.stop()
    assert TOKEN not in server.output(), "the token appeared in the server's output"


def test_https_with_a_pkcs12_keystore_and_a_token_file(servers, stopped_checkpoint, tmp_path):
    keystore, cert = tmp_path / "serve.p12", tmp_path / "serve.pem"
    password = "keystore-pass-" + "9" * 8
    subprocess.run(["keytool", "-genkeypair", "-alias", "serve", "-keyalg", "RSA", "-keysize", "2048",
                    "-dname", "CN=localhost", "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-validity", "2",
                    "-storetype", "PKCS12", "-keystore", str(keystore), "-storepass", password,
                    "-keypass", password], check=True, capture_output=True, timeout=60)
    subprocess.run(["keytool", "-exportcert", "-rfc", "-alias", "serve", "-keystore", str(keystore),
                    "-storepass", password, "-file", str(cert)], check=True, capture_output=True, timeout=60)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server = servers(stopped_checkpoint, "--port", "0", "--keystore", str(keystore), "--token-file", str(token_file),
                     env={"TXSTATE_SERVE_KEYSTORE_PASSWORD": password})
    assert server.url.startswith("https://127.0.0.1:"), server.url
    server.context = ssl.create_default_context(cafile=str(cert))
    response = server.query({"type": "key", "key": [4]}, headers={"Authorization": f"Bearer {TOKEN}"})
    value = [r for r in response["partitions"] if r["result"] is not None][0]
    check_counter(value["result"], 4, value["position"]["batchId"], "a key query over HTTPS")
    assert server.request("GET", "/v1/describe")[0] == 401
    # A client that does not trust the certificate is refused by TLS itself.
    server.context = ssl.create_default_context()
    with pytest.raises(ssl.SSLError):
        server.request("GET", "/health")
    server.stop()
    assert TOKEN not in server.output() and password not in server.output()


def test_a_key_sent_by_column_name_finds_the_same_row_and_named_rows_answer_by_column_name(
        servers, stopped_checkpoint):
    server = servers(stopped_checkpoint, "--port", "0")
    by_position = [r for r in server.query({"type": "key", "key": [3]})["partitions"] if r["result"] is not None]
    by_name = [r for r in server.query({"type": "key", "key": {"k": 3}}, namedRows=True)["partitions"]
               if r["result"] is not None]
    assert len(by_position) == 1 and [r["partition"] for r in by_name] == [by_position[0]["partition"]], by_name
    assert by_name[0]["result"] == dict(zip(["count", "sum", "max"], by_position[0]["result"])), by_name
    response = server.query({"type": "range", "lower": {"k": 2}, "upper": {"k": 4}, "limit": 10}, namedRows=True)
    rows = [(row, r["position"]["batchId"]) for r in response["partitions"] for row in r["result"]["rows"]]
    assert sorted(row["key"]["k"] for row, _ in rows) == [2, 3, 4], response
    for row, batch in rows:
        check_counter(tuple(row["value"][c] for c in ("count", "sum", "max")), row["key"]["k"], batch, "a named range")


# ------------------------------------------------------------------------------------------------
# Malformed requests and limits


def test_malformed_requests_get_a_clear_4xx_and_the_server_keeps_answering(servers, stopped_checkpoint, tmp_path):
    replicas = tmp_path / "replicas"
    server = servers(stopped_checkpoint, "--port", "0", "--max-page", "50", "--max-request-bytes", "2048",
                     "--local-dir", str(replicas))
    assert any(replicas.iterdir()), "the follower keeps its replicas under --local-dir"
    cases = [
        ("invalid JSON", "POST", "/v1/query", "{not json", 400, "TXSTATE_QUERY_BAD_REQUEST", "not valid JSON"),
        ("not an object", "POST", "/v1/query", "[1, 2]", 400, "TXSTATE_QUERY_BAD_REQUEST", "JSON object"),
        ("no query", "POST", "/v1/query", "{}", 400, "TXSTATE_QUERY_BAD_REQUEST", "'query'"),
        ("wrong key shape", "POST", "/v1/query", json.dumps({"query": {"type": "key", "key": ["x", 2]}}), 400,
         "TXSTATE_QUERY_BAD_KEY", "struct<k:bigint>"),
        ("key column by a wrong name", "POST", "/v1/query", json.dumps({"query": {"type": "key", "key": {"key": 2}}}),
         400, "TXSTATE_QUERY_BAD_KEY", "has no column 'key' and is missing 'k'; struct<k:bigint> has the columns k"),
        ("unknown query type", "POST", "/v1/query", json.dumps({"query": {"type": "everything"}}), 400,
         "TXSTATE_SERVE_UNKNOWN_QUERY_TYPE", "'everything'"),
        ("query type not a string", "POST", "/v1/query", json.dumps({"query": {"type": 7}}), 400,
         "TXSTATE_SERVE_UNKNOWN_QUERY_TYPE", "'7'"),
        ("limit not a number", "POST", "/v1/query", json.dumps({"query": {"type": "scan", "limit": "ten"}}), 400,
         "TXSTATE_SERVE_BAD_REQUEST", "'query.limit'"),
        ("limit below 1", "POST", "/v1/query", json.dumps({"query": {"type": "scan", "limit": 0}}), 400,
         "TXSTATE_QUERY_BAD_LIMIT", "between 1"),
        ("bound without a batch", "POST", "/v1/query",
         json.dumps({"query": {"type": "key", "key": [1]}, "bound": {"type": "atLeastBatch"}}), 400,
         "TXSTATE_SERVE_BAD_REQUEST", "'bound'"),
        ("bound with a bad partition", "POST", "/v1/query",
         json.dumps({"query": {"type": "key", "key": [1]}, "bound": {"type": "atLeast", "partitions": {"x": 1}}}),
         400, "TXSTATE_SERVE_BAD_REQUEST", "partition numbers"),
        ("limit over --max-page", "POST", "/v1/query", json.dumps({"query": {"type": "scan", "limit": 51}}), 400,
         "TXSTATE_SERVE_PAGE_TOO_LARGE", "--max-page"),
        ("bad continuation", "POST", "/v1/query",
         json.dumps({"query": {"type": "scan", "limit": 5, "continuation": "garbage"}}), 400,
         "TXSTATE_QUERY_BAD_CONTINUATION", "continuation"),
        ("body over --max-request-bytes", "POST", "/v1/query",
         json.dumps({"query": {"type": "multiKey", "keys": [[k] for k in range(600)]}}), 413,
         "TXSTATE_SERVE_REQUEST_TOO_LARGE", "--max-request-bytes"),
        ("unknown path", "GET", "/v2/everything", None, 404, "TXSTATE_SERVE_NOT_FOUND", "/v2/everything"),
        ("wrong method", "GET", "/v1/query", None, 405, "TXSTATE_SERVE_METHOD_NOT_ALLOWED", "POST /v1/query"),
        ("wrong method", "DELETE", "/health", None, 405, "TXSTATE_SERVE_METHOD_NOT_ALLOWED", "GET /health"),
    ]
    for name, method, path, body, want_status, want_code, want_words in cases:
        status, _, text = server.request(method, path, body)
        assert status == want_status, f"{name}: HTTP {status}, expected {want_status}: {text}"
        error = json.loads(text)
        assert error["error"] == want_code, f"{name}: {error}"
        assert want_words in error["message"], f"{name}: the message should name {want_words!r}: {error}"
        assert not any(marker in text for marker in STACK_MARKERS), f"{name}: a stack trace in the answer: {text}"
        assert server.health()[0] == 200, f"the server stopped answering after: {name}"
    # Without a limit, a page is the smaller of the protocol default and --max-page.
    response = server.query({"type": "scan"})
    assert all(len(r["result"]["rows"]) <= 50 for r in response["partitions"])
    rejected = server.request("GET", "/metrics")[2]
    assert 'txstate_serve_rejected_requests_total{limit="page"} 1' in rejected
    assert 'txstate_serve_rejected_requests_total{limit="request_bytes"} 1' in rejected
    assert 'txstate_serve_http_requests_total{endpoint="other",code="404"} 1' in rejected
    assert "Exception in" not in server.output()
    server.stop()  # SIGTERM: the server closes its follower, which deletes its replicas
    assert server.process.returncode in (0, 143, -signal.SIGTERM), server.output()
    assert not any(replicas.iterdir()), f"replicas left after SIGTERM: {list(replicas.iterdir())}"


def test_serve_without_a_java_says_how_to_get_one(tmp_path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk"),
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR.parent / "python"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "txstate_spark", "serve", str(tmp_path), "--operator", "0"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "JAVA_HOME" in done.stderr and "no-jdk" in done.stderr, done.stderr


def test_requests_over_max_concurrent_are_refused_with_retry_after(servers, stopped_checkpoint):
    server = servers(stopped_checkpoint, "--port", "0", "--max-concurrent", "1")
    host, port = server.url.split("://", 1)[1].rsplit(":", 1)

    def in_flight() -> float:
        return metric_values(server.request("GET", "/metrics")[2])["txstate_serve_requests_in_flight"]

    # A query whose body is still arriving holds the one slot.
    held = socket.create_connection((host, int(port)), timeout=30)
    try:
        held.sendall(b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"query\":")
        wait_until(lambda: in_flight() == 1, 30, "the held query in flight")
        for method, path, body in (("POST", "/v1/query", json.dumps({"query": {"type": "key", "key": [1]}})),
                                   ("GET", "/v1/describe", None)):
            status, headers, text = server.request(method, path, body)
            assert status == 503, f"{method} {path} over --max-concurrent: HTTP {status}: {text}"
            assert headers.get("retry-after") == "1" and json.loads(text)["error"] == "TXSTATE_SERVE_BUSY"
        assert server.health()[0] == 200, "health and metrics are not limited"
    finally:
        held.close()
    wait_until(lambda: in_flight() == 0, 30, "the held query gone")
    server.query({"type": "key", "key": [1]})
    assert 'txstate_serve_rejected_requests_total{limit="concurrency"} 2' in server.request("GET", "/metrics")[2]
