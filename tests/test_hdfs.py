"""txstate with its checkpoint on a real HDFS: a NameNode and a DataNode (Hadoop's MiniDFSCluster,
the Hadoop version pyspark ships) in their own JVM on loopback, started once for this module
(tests/servers/dfs_cluster.py) and stopped at its end.

- Operator equivalence: a case per state shape from test_operator_equivalence (an aggregation, a
  deduplication with eviction, the four stores of a stream-stream outer join), each with a stop
  and restart in the middle, emits batch by batch what Spark's HDFS provider emits on local disk,
  while every byte of txstate's state goes through HDFS (the changelogs are listed there).
- An executor killed mid-batch, before its store commits, with the checkpoint on HDFS: the same
  job and checks as test_executor_failure, the early-commit segments and changelogs written to
  and listed on HDFS.

Needs target/dfs-classpath.txt and the 4.3 test classes (`build/sbt spark43/Test/compile`); fails,
never skips, without them.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from harness.streaming_harness import assert_same_output, list_checkpoint, run_case
from servers.dfs_cluster import DfsCluster, DfsUnavailable
from test_executor_failure import assert_exact_counts, run_kill_job
from test_operator_equivalence import OPERATOR_CASES, run_reference

# One case per state shape: keyed aggregation, dedup with watermark eviction, a stream-stream join.
HDFS_CASES = ("aggregation_update", "dedup_with_watermark", "stream_stream_left_outer_join")


@pytest.fixture(scope="module")
def dfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DfsCluster]:
    """A NameNode and a DataNode in their own JVM, for this module's tests."""
    try:
        cluster = DfsCluster.start(tmp_path_factory.mktemp("dfs"))
    except DfsUnavailable as error:
        pytest.fail(str(error), pytrace=False)
    yield cluster
    cluster.stop()


@pytest.mark.parametrize("case", [c for c in OPERATOR_CASES if c.name in HDFS_CASES], ids=lambda c: c.name)
def test_a_checkpoint_on_hdfs_emits_what_spark_emits_batch_by_batch_across_a_restart(
    spark, candidate_provider, work_dir, dfs, case
):
    reference = run_reference(spark, case, work_dir)
    checkpoint = dfs.path(f"/equivalence/{case.name}/checkpoint")
    candidate = run_case(spark, case, candidate_provider, work_dir / "candidate", checkpoint=checkpoint)
    assert len(candidate.run_batch_ids) == 2 and all(candidate.run_batch_ids)
    assert_same_output(reference, candidate, case.name)
    # The state really went through HDFS: every store instance's changelogs are there.
    stores = list_checkpoint(checkpoint)
    assert all(store.changelogs for store in stores), [str(s.path) for s in stores]
    assert str(stores[0].path).startswith(dfs.hdfs + "/equivalence/")


def test_an_executor_killed_before_its_store_commits_on_hdfs_leaves_exact_counts(
    work_dir, plugin_jar, candidate_provider, dfs
):
    batches, _ = run_kill_job(work_dir, plugin_jar, candidate_provider, ["--hdfs", dfs.hdfs, "--webhdfs", dfs.web])
    assert_exact_counts(work_dir, batches, "HDFS")
