"""State reads from a Spark Connect client, against a real local Spark Connect server.

The server is pyspark's own (`SparkConnectServer`, shipped in pyspark 4.3's jars) started with our
jar (servers/connect_server.py); the client is jobs/connect_query_job.py in a fresh interpreter. It runs a
stateful query on the server and reads its state through `spark.read.format("txstate")`, SQL, and
`StateQueryRequest.execute(spark)` on the Connect session. Every answer is checked against the
counting model: a key's (count, sum, max) is exactly the state after the batch it was read at.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.counting_stream import KEYS, expected_counter
from servers.connect_server import ConnectServer, run_client

TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def connect_report(plugin_jar, tmp_path_factory):
    pytest.importorskip("grpc", reason="the Spark Connect client needs grpcio (requirements-dev.txt)")
    work_dir = tmp_path_factory.mktemp("connect")
    checkpoint = work_dir / "checkpoint"
    script = ("import runpy, sys\n"
              f"sys.argv = ['connect_query_job.py', {str(checkpoint)!r}]\n"
              f"runpy.run_path({str(TESTS_DIR / 'jobs' / 'connect_query_job.py')!r}, run_name='__main__')\n")
    with ConnectServer(plugin_jar, work_dir / "server", conf={"spark.sql.shuffle.partitions": "2"}) as server:
        done = run_client(server.url, script, timeout_s=420)
        log = server.log_text()
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, (
        f"the Connect client failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}\n"
        f"--- server log tail ---\n{log[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def check(rows: list, context: str) -> None:
    for k, value, _partition, batch in rows:
        assert tuple(value) == expected_counter(k, batch), f"{context}: key {k} at batch {batch} is {value}"


def test_the_client_is_a_spark_connect_session(connect_report):
    assert connect_report["session"].startswith("pyspark.sql.connect")
    assert connect_report["still_active"]


def test_the_data_source_answers_from_a_connect_client(connect_report):
    key = connect_report["source_key"]
    assert [row[0] for row in key] == [5]
    check(key, "key equality")
    assert sorted(row[0] for row in connect_report["source_in"]) == [1, 2, 3]
    check(connect_report["source_in"], "IN")
    scan = connect_report["source_scan"]
    assert sorted(row[0] for row in scan) == list(range(KEYS))
    check(scan, "full scan")
    for partition in {row[2] for row in scan}:
        assert len({row[3] for row in scan if row[2] == partition}) == 1, f"partition {partition} mixed batches"


def test_sql_on_a_temporary_view_from_a_connect_client(connect_report):
    (k, count, batch), = connect_report["sql"]
    assert k == 7 and count == expected_counter(7, batch)[0]


def test_state_query_requests_run_under_connect_and_return_the_same_objects(connect_report):
    assert connect_report["api_types"] == ["StateQueryResult", "QueryResult", True]
    value, _partition, batch = connect_report["api_key"]
    assert tuple(value) == expected_counter(4, batch)
    found = {}
    for p, values in connect_report["api_multi"].items():
        for key, value in zip([0, 11, 99], values):
            if value is not None:
                assert key not in found
                found[key] = value
                assert tuple(value) == expected_counter(key, connect_report["api_multi_batches"][p])
    assert sorted(found) == [0, 11]
    scanned = connect_report["api_scan"]
    assert sorted(row[0] for row in scanned) == list(range(KEYS))
    check(scanned, "paged scan through the checkpoint path")
    assert connect_report["api_unknown_store"].startswith("StateQueryError: [TXSTATE_QUERY_UNKNOWN_STORE]")


def test_a_follower_runs_in_the_connect_server_and_answers_the_client(connect_report):
    value, batch = connect_report["follower_key"]
    assert tuple(value) == expected_counter(6, batch)
    rows = connect_report["follower_source"]
    assert sorted(row[0] for row in rows) == list(range(KEYS))
    check(rows, "txstate source through a follower")
    applied, leader, behind = connect_report["follower_lag"]
    assert applied is not None and leader >= applied and behind == leader - applied
