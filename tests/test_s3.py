"""txstate with its checkpoint on S3: Hadoop's s3a:// connector (hadoop-aws at the Hadoop version
pyspark ships) against a real S3-compatible server, s3proxy, in its own JVM on loopback, started once
for this module (tests/servers/s3_server.py) and stopped at its end. On S3 a rename is a copy and a delete,
so txstate writes its files straight to their names (docs/ARCHITECTURE.md, "Writes on object stores"),
and Spark's own logs take Spark's non-atomic rename path.

- Operator equivalence: a case per state shape from test_operator_equivalence (an aggregation, a
  deduplication with eviction, the four stores of a stream-stream outer join), each with a stop
  and restart in the middle, emits batch by batch what Spark's HDFS provider emits on local disk,
  while every byte of txstate's state goes through s3a (the changelogs are objects in the bucket).
- An executor killed mid-batch, before its store commits, with the checkpoint on S3: the same job
  and checks as test_executor_failure and test_hdfs.
- What a steady batch reads (docs/ARCHITECTURE.md, "What a load reads"): a store instance that
  committed a version and loads it for the next batch GETs no changelog back (it asks for the
  object's status, a HEAD, and recognizes its own bytes by their entity tag), and writes each changelog
  with one PUT under its name, never a copy.
- A write abandoned midway (a failure while the file's bytes are written) leaves no object under the
  name, and the one before it stays whole; a user's own checkpoint file manager class is kept.

This module needs a Spark session with s3a on its classpath, so it runs in a pytest process of its
own (`make test-s3`; `make test-python` leaves it out). It needs target/s3a-classpath.txt and
target/s3proxy-classpath.txt (`build/sbt s3/s3Classpath`); it fails, never skips, without them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from harness import streaming_harness
from harness.streaming_harness import assert_same_output, await_available_now, list_checkpoint, run_case
from servers.s3_server import BUCKET, S3Server, S3Unavailable
from test_executor_failure import assert_exact_counts, run_kill_job
from test_hdfs import HDFS_CASES
from test_operator_equivalence import OPERATOR_CASES, run_reference


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """s3proxy in its own JVM with one bucket, behind the counting proxy, for this module's tests."""
    try:
        server = S3Server.start(tmp_path_factory.mktemp("s3"))
    except S3Unavailable as error:
        pytest.fail(str(error), pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def spark(plugin_jar: Path, s3: S3Server):
    """conftest's local[2] session, with s3a on the driver's classpath and pointed at the server."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:  # noqa: SLF001 (pyspark's documented singleton)
        pytest.fail("tests/test_s3.py needs a Spark session of its own (s3a on the driver's classpath): run it "
                    "in a pytest process of its own, as `make test-s3` does", pytrace=False)
    builder = SparkSession.builder.master("local[2]").appName("txstate-spark-s3-tests")
    for key, value in {**streaming_harness.spark_settings(plugin_jar), **s3.spark_settings()}.items():
        builder = builder.config(key, value)
    session = builder.config("spark.driver.memory", "2g").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.mark.parametrize("case", [c for c in OPERATOR_CASES if c.name in HDFS_CASES], ids=lambda c: c.name)
def test_a_checkpoint_on_s3_emits_what_spark_emits_batch_by_batch_across_a_restart(
    spark, candidate_provider, work_dir, s3, case
):
    reference = run_reference(spark, case, work_dir)
    checkpoint = s3.path(f"equivalence/{case.name}/checkpoint")
    before = s3.counters()
    candidate = run_case(spark, case, candidate_provider, work_dir / "candidate", checkpoint=checkpoint)
    assert len(candidate.run_batch_ids) == 2 and all(candidate.run_batch_ids)
    assert_same_output(reference, candidate, case.name)
    # The state really went through s3a: every store instance's changelogs are objects in the
    # bucket, each uploaded by a PUT.
    stores = list_checkpoint(checkpoint)
    assert all(store.changelogs for store in stores), [str(s.path) for s in stores]
    assert str(stores[0].path).startswith(f"s3a://{BUCKET}/equivalence/")
    after = s3.counters()
    puts = after.get("requests.PUT", 0) - before.get("requests.PUT", 0)
    assert puts >= sum(len(store.changelogs) for store in stores), (before, after)


def test_an_executor_killed_before_its_store_commits_on_s3_leaves_exact_counts(
    work_dir, plugin_jar, candidate_provider, s3
):
    batches, _ = run_kill_job(work_dir, plugin_jar, candidate_provider,
                              ["--s3", s3.endpoint, "--s3-bucket-dir", str(s3.path("").local)])
    assert_exact_counts(work_dir, batches, "S3")


def test_steady_batches_on_s3_get_no_changelog_back(spark, candidate_provider, work_dir, s3):
    batches = 8
    source = work_dir / "input"
    source.mkdir()
    for batch in range(batches):
        rows = (json.dumps({"k": (batch * 7 + i) % 50, "v": i}) for i in range(200))
        (source / f"batch-{batch:02d}.json").write_text("\n".join(rows) + "\n")
    provider = spark.conf.get("spark.sql.streaming.stateStore.providerClass", None)
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", candidate_provider)
    # Keep every version: a cleanup round (maintenance, once a second here, not a batch) reads the
    # header of the version it would delete below, which this test does not count.
    retained = spark.conf.get("spark.sql.streaming.minBatchesToRetain")
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", "100")
    try:
        events = spark.readStream.schema("k long, v long").option("maxFilesPerTrigger", 1).json(str(source))
        counts = events.groupBy("k").count()
        query = (counts.writeStream.outputMode("update")
                 .option("checkpointLocation", s3.uri("steady/checkpoint"))
                 .foreachBatch(lambda df, _: df.write.format("noop").mode("overwrite").save())
                 .trigger(availableNow=True).start())
        await_available_now(query, 300, "the steady query on S3")
        assert len({p["batchId"] for p in query.recentProgress}) == batches
    finally:
        for key, value in (("spark.sql.streaming.stateStore.providerClass", provider),
                           ("spark.sql.streaming.minBatchesToRetain", retained)):
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    # By path, not by position: the server keeps the last requests only, and earlier tests filled it.
    changelogs = [(kind, path) for kind, path, _ in s3.recent_requests()
                  if "/steady/checkpoint/state/" in path and path.endswith(".txlog")]
    written = {path for kind, path in changelogs if kind == "PUT"}
    assert len(written) >= batches, changelogs  # every store's versions went through s3a
    copies = [path for kind, path in changelogs if kind == "COPY"]
    assert copies == [], f"changelogs renamed into place (a copy each), not written to their names: {copies[:5]}"
    gets = [path for kind, path in changelogs if kind == "GET"]
    assert gets == [], f"steady loads read {len(gets)} changelogs back: {gets[:5]}"


def test_a_write_abandoned_midway_on_s3_leaves_no_object(spark, s3):
    # The file manager a store uses for an s3a:// store directory, in the JVM the queries run in.
    jvm = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    key = "abandoned/state/0/0"
    store_dir = jvm.org.apache.hadoop.fs.Path(s3.uri(key))
    stored = s3.path(key).local  # the bucket's objects, as s3proxy keeps them on disk
    files = jvm.txstate.checkpoint.LocalCheckpointFileManager.forLocation(store_dir, hadoop_conf)
    assert files.getClass().getSimpleName() == "DirectPutCheckpointFileManager"

    def write(name: str, body: bytes, finish: str) -> None:
        out = files.createAtomic(jvm.org.apache.hadoop.fs.Path(store_dir, name), True)
        out.write(bytearray(body))
        getattr(out, finish)()  # close publishes; cancel is what FramedFile calls when a body throws

    whole = os.urandom(1 << 20)
    write("1.txlog", whole, "close")
    assert (stored / "1.txlog").read_bytes() == whole
    write("1.txlog", os.urandom(1 << 19), "cancel")
    assert (stored / "1.txlog").read_bytes() == whole, "an abandoned rewrite replaced the whole file"
    write("2.txlog", b"partial", "cancel")
    assert not (stored / "2.txlog").exists(), "an abandoned first write left an object under its name"
    files.close()
    # A user who names Spark's checkpoint file manager class keeps it for txstate's files too.
    chosen = jvm.org.apache.hadoop.conf.Configuration(hadoop_conf)
    spark_manager = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
    chosen.set("spark.sql.streaming.checkpointFileManagerClass", spark_manager)
    theirs = jvm.txstate.checkpoint.LocalCheckpointFileManager.forLocation(store_dir, chosen)
    assert theirs.getClass().getName() == spark_manager
