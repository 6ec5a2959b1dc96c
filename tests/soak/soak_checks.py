"""The checks the soak and the storm share: what the three queries of soak_model.py delivered
(`<work>/output/<query>/<batch>-<attempt>.json`, as soak_driver.py writes them), their final state
(`<work>/state-<query>.json`) and the interactive-query answers (`<work>/iq.jsonl`), each against
the model. Every problem found is a violation, kept once in `violations`."""

from __future__ import annotations

import json
from pathlib import Path

from soak_model import QUERIES, Model, check_answer, join_expected, output_differences


class QueryChecks:
    def __init__(self, work: Path, model: Model) -> None:
        self.work = work
        self.model = model
        self.violations: list[str] = []
        self.offsets: dict[str, dict[int, list[int | None]]] = {}  # query -> batch -> end offset per source
        self.unchecked_batches = 0

    def deliveries(self, query: str) -> dict[int, list[list]]:
        found: dict[int, list[list]] = {}
        for path in sorted((self.work / "output" / query).glob("[0-9]*.json")):
            found.setdefault(int(path.name.split("-")[0]), []).append(json.loads(path.read_text()))
        return found

    def record_offsets(self) -> None:
        """Each micro-batch's end offset per source, read from every query's offset log while it is
        there (cleanup keeps only the last few entries). A micro-batch need not read file i in batch
        i: the join's two sources list their directories one after the other, and a run stopped
        while it planned a batch leaves a source-log entry that the next run's batch reads together
        with a new file."""
        for query in QUERIES:
            recorded = self.offsets.setdefault(query, {})
            for entry in (self.work / "checkpoint" / query / "offsets").glob("[0-9]*"):
                batch = int(entry.name)
                if batch in recorded:
                    continue
                try:
                    lines = entry.read_text().splitlines()
                except FileNotFoundError:
                    continue
                ends = [json.loads(line)["logOffset"] if line.startswith("{") else None for line in lines[2:]]
                if len(ends) == (2 if query == "join" else 1):
                    recorded[batch] = ends

    def files_read(self, query: str) -> dict[str, dict[int, list[int]]]:
        """source -> micro-batch -> input file indexes it read, for every batch of `query` whose
        offsets (and the previous batch's) were recorded: the offsets give each source's log
        positions, Spark's file source logs (`checkpoint/<query>/sources/<n>/`) the files at them."""
        files_at: dict[int, dict[int, int]] = {}  # source -> log position -> file index
        side_of: dict[int, str] = {}
        for log in (self.work / "checkpoint" / query / "sources").glob("*/*"):
            if log.name.startswith("."):
                continue
            for line in log.read_text().splitlines()[1:]:
                entry = json.loads(line)
                side, name = entry["path"].split("/")[-2:]
                side_of[int(log.parent.name)] = side
                files_at.setdefault(int(log.parent.name), {})[int(entry["batchId"])] = int(name.split("-")[1].split(".")[0])
        offsets = self.offsets.get(query, {})
        read: dict[str, dict[int, list[int]]] = {side: {} for side in side_of.values()}
        for batch, ends in sorted(offsets.items()):
            if batch > 0 and (batch - 1) not in offsets:
                continue  # its start is unknown: not checked
            before = offsets[batch - 1] if batch > 0 else [None] * len(ends)
            for source, end in enumerate(ends):
                start = -1 if before[source] is None else before[source]
                stop = -1 if end is None else end
                read.setdefault(side_of.get(source, str(source)), {})[batch] = [
                    files_at.get(source, {})[position] for position in range(start + 1, stop + 1)]
        return read

    def last_file_of_batch(self, query: str = "agg") -> dict[int, int]:
        """micro-batch -> the newest input file it read (the model's index of the state it left)."""
        return {batch: max(files) for batch, files in self.files_read(query).get(query, {}).items() if files}

    def expected_outputs(self) -> dict[str, dict[int, list]]:
        """Each query's output per micro-batch, from the files each batch read: agg emits every key
        its files touched with the state after the newest of them, dedup the keys first seen in them."""
        expected: dict[str, dict[int, list]] = {"join": join_expected(self.model.seed, self.model.sizes,
                                                                      self.files_read("join"))}
        for query in ("agg", "dedup"):
            expected[query] = {}
            for batch, files in self.files_read(query).get(query, {}).items():
                if any(i not in self.model.expected[query] for i in files):
                    continue  # a file the model has not generated: reported as never written
                if query == "dedup":
                    expected[query][batch] = sorted(r for i in files for r in self.model.expected["dedup"][i])
                else:
                    keys = {r[0] for i in files for r in self.model.expected["agg"][i]}
                    expected[query][batch] = sorted((k, *self.model.agg_at(k, max(files))) for k in keys)
        return expected

    def check_outputs(self, final: bool = False) -> None:
        """Every delivered batch equals the model; at the end also: every batch delivered, final state."""
        problems = []
        expected = self.expected_outputs()
        self.unchecked_batches = 0
        for query in QUERIES:
            delivered = self.deliveries(query)
            for batch, copies in sorted(delivered.items()):
                want = expected[query].get(batch)
                if want is None:
                    self.unchecked_batches += 1  # its offsets went before the harness read them
                    continue
                for copy in copies:
                    difference = output_differences(copy, want)
                    if difference:
                        problems.append(f"{query} batch {batch}: {difference}")
            if final:
                # Every input file reached the state: the final state below says so for agg and dedup.
                committed = {int(p.name) for p in (self.work / "checkpoint" / query / "commits").iterdir() if p.name.isdigit()}
                missing = sorted(committed - set(delivered))
                if missing:
                    problems.append(f"{query}: batches {missing} never delivered")
        if final:
            for query, want in (("agg", sorted((k, n, t) for k, (n, t) in self.model.agg_state.items())),
                                ("dedup", sorted((k,) for k in self.model.dedup_seen))):
                dump = self.work / f"state-{query}.json"
                if not dump.exists():
                    problems.append(f"{query}: no final state dump")
                    continue
                difference = output_differences(json.loads(dump.read_text()), want)
                if difference:
                    problems.append(f"{query} final state: {difference}")
        for problem in problems:
            if problem not in self.violations:
                self.violations.append(problem)

    def check_answers(self, log: str = "iq.jsonl") -> dict[str, int]:
        """Every interactive-query answer in `<work>/<log>` against the model; counts of what was checked."""
        counts = {"answers": 0, "checked_values": 0, "failed_partitions": 0, "errors": 0, "unchecked_partitions": 0}
        path = self.work / log
        state_at = self.last_file_of_batch("agg")
        for line in path.read_text().splitlines() if path.exists() else ():
            record = json.loads(line)
            if "error" in record:
                counts["errors"] += 1
                continue
            counts["failed_partitions"] += len(record["failures"])
            # The model's state is by input file: each answer's batch becomes the newest file it read.
            partitions = {p: {**a, "batch": state_at[a["batch"]]} for p, a in record["partitions"].items()
                          if a["batch"] in state_at}
            counts["unchecked_partitions"] += len(record["partitions"]) - len(partitions)
            if not partitions:
                continue
            counts["answers"] += 1
            counts["checked_values"] += sum(v is not None for a in partitions.values() for v in a["values"])
            problems = check_answer(self.model, record["keys"], partitions)
            if record["failures"] or len(partitions) < len(record["partitions"]):
                problems = [p for p in problems if "missing" not in p]  # a partial answer: each partition still checked
            self.violations += [f"interactive query ({log}) at {record['at']:.3f}: {p}" for p in problems[:5]]
        return counts
