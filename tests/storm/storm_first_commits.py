"""The storm's first commits: fresh starts of the aggregation, each on a checkpoint of its own over
the storm's input, with the txstate data source reading it back to back from the moment it starts.
A read planned after batch 0 has written its metadata but before its commit must wait for that
commit (`waitMs`), not fail: a restart never comes back to that moment, so the storm makes it
`--first-commits` times, beside the restarts. Each probe's reads are checked against the model at
the input file its batch 0 read up to (a batch 0 of several files, so that reads fall inside it)."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.cluster_tasks import wait_for
from soak_checks import QueryChecks
from soak_driver import start_query
from storm_readers import LogTail, check_source_reads, read_records, read_through_source

FILES_IN_FIRST_BATCH = 8
COMMIT_DEADLINE_S = 120.0


class FirstCommitProbes:
    def __init__(self, storm, probes: int, trigger: str) -> None:
        self.storm = storm
        self.probes = probes
        self.trigger = trigger
        self.counts = {"probes": 0, "reads": 0, "rows_checked": 0, "failed": 0, "waited_for_first_commit": 0}

    def run(self) -> None:
        """Every probe in turn; a probe that cannot go on is a violation and ends the probes."""
        for index in range(self.probes):
            try:
                self.probe(index)
            except Exception as error:
                self.storm.violations.append(f"first-commit probe {index} failed: {type(error).__name__}: {str(error)[:2000]}")
                return

    def probe(self, index: int) -> None:
        storm = self.storm
        work: Path = storm.work / "first-commits" / str(index)
        work.mkdir(parents=True)
        (work / "input").symlink_to(storm.work / "input", target_is_directory=True)
        checkpoint, log = work / "checkpoint" / "agg", work / "source.jsonl"
        with storm.start_lock:
            query = start_query(storm.spark, work, "agg", self.trigger, FILES_IN_FIRST_BATCH,
                                query_name=f"storm_first_commit_{index}")
        stop = threading.Event()
        reader = threading.Thread(target=read_through_source, args=(storm.spark, checkpoint, log, stop))
        reader.start()
        try:
            committed = wait_for(lambda: (checkpoint / "commits" / "0").exists() or not query.isActive, COMMIT_DEADLINE_S)
            if not committed or not query.isActive:
                raise RuntimeError(f"batch 0 was not committed within {COMMIT_DEADLINE_S:.0f} s")
            # One read planned after the commit as well, so each probe's log ends on a settled read.
            tail = LogTail(log)
            wait_for(lambda: any(not r["before_first_commit"] for r in tail.new_records()), 60)
        finally:
            stop.set()
            reader.join(60)
            query.stop()
            storm.note_failure(f"first-commit probe {index}", query, stopped=True)
        self.check(index, work, log)

    def check(self, index: int, work: Path, log: Path) -> None:
        checks = QueryChecks(work, self.storm.model)
        checks.record_offsets()
        records = read_records(log)
        counts, problems = check_source_reads(self.storm.model, checks.last_file_of_batch("agg"), records)
        self.storm.violations.extend(f"first-commit probe {index}: {p}" for p in problems)
        self.counts["probes"] += 1
        for key in ("reads", "rows_checked", "failed"):
            self.counts[key] += counts[key]
        self.counts["waited_for_first_commit"] += sum(
            1 for r in records if r["before_first_commit"] and r.get("rows"))

    def report_problems(self) -> list[str]:
        """A storm whose probes planned no read before a first commit tested nothing of it."""
        if self.probes and self.counts["waited_for_first_commit"] == 0:
            return [f"no data-source read was planned before a first commit in {self.counts['probes']} probes"]
        return []
