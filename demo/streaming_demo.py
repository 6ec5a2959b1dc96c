"""A real Structured Streaming job on local Spark with the txstate provider (``make demo``).

A script of the repository, not part of the wheel. ``make demo`` builds the jar and runs it with the
source package on the path; by hand: ``PYTHONPATH=python
TXSTATE_SPARK_JAR=target/txstate-spark-4.3_2.13-<version>.jar python demo/streaming_demo.py``.

The job reads CSV files of ``event_id,word`` events (some events are delivered twice), drops the
duplicates with ``dropDuplicates(["event_id"])`` and counts words with ``groupBy("word").count()`` in
update mode: two stateful operators, both kept in the state store. It runs in two parts:

1. a first Spark session processes three files, one micro-batch each, then stops;
2. a brand-new Spark session first reads the stopped query's state with the ``txstate`` data source
   (every operator's rows and every count must be what part 1 ended with), then restarts the query
   from the same checkpoint and processes two more files. Their events include re-deliveries of part-1 events and more of the same words, so the
   final counts are right only if both operators recovered their state from the checkpoint.

While the stream runs, each micro-batch also asks the count operator's state store directly with
interactive queries (``txstate_spark.query``): a multi-key lookup of a few words, which must equal
the counts streamed so far and come from the batch being processed; after the end, a paged scan
reads the stopped query's state from the checkpoint files.

It prints a few lines: per micro-batch, its duration and the state rows of each operator; after the
restart, what the new session found in the checkpoint (the same rows and counts part 1 ended with);
one interactive query; and where the metrics are. ``--metrics`` prints every state operator metric
of every micro-batch too (Spark's and the provider's ``customMetrics``), each interactive query and
the paged scan (``make demo DEMO_ARGS=--metrics``). It checks the final counts against counts computed here in Python and the provider
class recorded in the checkpoint. Exit status 0 means every check passed. Needs only a JDK and
pyspark; runs in about a minute.
"""

import argparse
import io
import json
import os
import random
import shutil
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from txstate_spark.constants import PROVIDER_CLASS, PROVIDER_CLASS_KEY
from txstate_spark.session import configure

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Event = Tuple[int, str]

_WORDS = ["commit", "abort", "batch", "changelog", "snapshot", "rocksdb", "spark", "state",
          "stream", "version", "key", "value", "offset", "replay", "query", "partition"]
_EVENTS_PER_FILE = 300
_FILES_PER_RUN = (3, 2)
_QUERY_TIMEOUT_S = 120

# Warnings stay visible (a provider's warnings matter in a demo); Spark's known start-up notes do not.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
"""


def generate_files(count: int, first_id: int, rng: random.Random, delivered: List[Event]) -> List[List[Event]]:
    """Make ``count`` files of events; about one event in eight re-delivers an earlier event.

    ``delivered`` holds every distinct event so far and is extended with the new ones.
    """
    files: List[List[Event]] = []
    next_id = first_id
    for _ in range(count):
        rows: List[Event] = []
        for _ in range(_EVENTS_PER_FILE):
            if delivered and rng.random() < 0.125:
                rows.append(rng.choice(delivered))
            else:
                event = (next_id, rng.choice(_WORDS))
                next_id += 1
                delivered.append(event)
                rows.append(event)
        files.append(rows)
    return files


def write_files(directory: Path, first_index: int, files: Sequence[Sequence[Event]]) -> None:
    """Write one CSV per micro-batch, with increasing modification times (the file source's order)."""
    directory.mkdir(parents=True, exist_ok=True)
    base = time.time() - 3600
    for offset, rows in enumerate(files):
        index = first_index + offset
        path = directory / f"events-{index:03d}.csv"
        path.write_text("".join(f"{event_id},{word}\n" for event_id, word in rows))
        os.utime(path, (base + index, base + index))


def start_session(provider_class: str, log4j_file: Path) -> "SparkSession":
    """A quiet local[2] session whose state stores use the txstate provider (via configure())."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("txstate-spark demo")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")  # streaming disables it anyway, with a warning
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j_file}")
    )
    configure(builder)
    if provider_class != PROVIDER_CLASS:
        builder.config(PROVIDER_CLASS_KEY, provider_class)
    return builder.getOrCreate()


_QUERIED_WORDS = ["spark", "state", "commit"]
# The demo's two stateful operators, by the key of their store (txstate's schema file says it), and the
# name Spark gives each in StreamingQueryProgress.stateOperators.
_ROLE_BY_KEY = {("event_id",): "dedupe", ("word",): "count"}
_ROLE_BY_PROGRESS_NAME = {"dedupe": "dedupe", "stateStoreSave": "count"}


def operator_ids(checkpoint: Path) -> Dict[str, str]:
    """The operator id of each of the demo's stores ("dedupe", "count"), from the schema file txstate
    writes beside each operator's partitions (`state/<id>/_txstate/default.schema.json`). Ids work on
    every Spark line; Spark 3.5 records no operator names."""
    ids: Dict[str, str] = {}
    for schema_file in sorted((checkpoint / "state").glob("*/_txstate/default.schema.json")):
        key = tuple(f["name"] for f in json.loads(schema_file.read_text())["keySchema"]["fields"])
        if key in _ROLE_BY_KEY:
            ids[_ROLE_BY_KEY[key]] = schema_file.parent.parent.name
    return ids


def count_operator(checkpoint: Path) -> str:
    """The count's stateful operator, as interactive queries name it: `stateStoreSave`, the name Spark
    4 records in its operator metadata; on Spark 3.5, which records no operator names, its id."""
    from pyspark import __version__ as spark_version

    if int(spark_version.split(".")[0]) >= 4:
        return "stateStoreSave"
    ids = operator_ids(checkpoint)
    if "count" not in ids:
        raise RuntimeError(f"no store keyed by word under {checkpoint / 'state'}: the demo's count operator "
                           "has not committed a batch yet")
    return ids["count"]


def query_state(spark: "SparkSession", checkpoint: Path, batch_id: int, latest: Dict[str, int],
                problems: List[str], answers: Dict[int, Dict[str, int]], verbose: bool) -> None:
    """Interactive queries while the stream runs: look a few words up in the count operator's store.

    Called from foreachBatch after the batch's rows were collected, so every partition of the store
    has committed this batch: the answer must be the counts streamed so far, at this batch. The
    answer goes to ``answers[batch_id]``.
    """
    from txstate_spark.query import MultiKeyQuery, StateQueryRequest

    request = (StateQueryRequest.in_store(str(checkpoint), operator=count_operator(checkpoint))
               .with_query(MultiKeyQuery.with_keys([{"word": w} for w in _QUERIED_WORDS])))
    result = request.execute(spark)
    found: Dict[str, int] = {}
    for answer in result.partition_results.values():
        for word, value in zip(_QUERIED_WORDS, answer.result):  # raises if a partition failed
            if value is not None:
                found[word] = value["count"]
    batches = sorted({r.position.batch_id for r in result.partition_results.values()})
    expected = {w: latest[w] for w in _QUERIED_WORDS if w in latest}
    answers[batch_id] = found
    if verbose:
        print(f"    interactive query at batch {batch_id}: {found} (partitions answered from batch(es) {batches})")
    if found != expected or batches != [batch_id]:
        problems.append(f"batch {batch_id}: the state store said {found} at batches {batches}, "
                        f"the stream {expected} at batch {batch_id}")


def scan_checkpoint(spark: "SparkSession", checkpoint: Path, verbose: bool) -> Dict[str, int]:
    """After the query stopped: every word's count, read page by page from the checkpoint files."""
    from txstate_spark.query import ScanQuery, StateQueryRequest

    request = (StateQueryRequest.in_store(str(checkpoint), operator=count_operator(checkpoint))
               .with_query(ScanQuery.all().with_limit(5)).allow_checkpoint_reads())
    counts: Dict[str, int] = {}
    pages = 0
    for page in request.pages(spark):
        pages += 1
        counts.update((row.key["word"], row.value["count"]) for row in page.rows)
        position = page.position
    if verbose:
        print(f"  scan of the stopped query's state from its checkpoint: {len(counts)} words in {pages} pages "
              f"(limit 5 per partition), at batch {position.batch_id}")
    return counts


def state_in_checkpoint(spark: "SparkSession", checkpoint: Path) -> Tuple[Dict[str, int], Dict[str, int]]:
    """What a new session finds in the stopped query's checkpoint, read with the txstate data source:
    the rows of each operator's store ("dedupe", "count") and every word's count."""
    def read(role: str) -> "DataFrame":
        return spark.read.format("txstate").option("operator", ids[role]).load(str(checkpoint))

    ids = operator_ids(checkpoint)
    rows = {role: read(role).count() for role in sorted(ids)}
    counts = {row["word"]: row["count"] for row in read("count").select("key.word", "value.count").collect()}
    return rows, counts


def run_query(spark: "SparkSession", input_dir: Path, checkpoint: Path, latest: Dict[str, int],
              problems: List[str], answers: Optional[Dict[int, Dict[str, int]]],
              verbose: bool) -> List[Dict[str, Any]]:
    """Run the dedupe + count query over all new files (one file per micro-batch); return its progress.

    Unless ``answers`` is None, each batch also queries the count operator's state store (query_state)."""
    events = (
        spark.readStream.schema("event_id LONG, word STRING")
        .option("maxFilesPerTrigger", 1)
        .csv(str(input_dir))
    )
    counts = events.dropDuplicates(["event_id"]).groupBy("word").count()

    def collect(batch: "DataFrame", batch_id: int) -> None:
        for row in batch.collect():
            latest[row["word"]] = row["count"]
        if answers is not None:
            query_state(spark, checkpoint, batch_id, latest, problems, answers, verbose)

    query = (
        counts.writeStream.queryName("txstate_demo")
        .outputMode("update")
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(collect)
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(_QUERY_TIMEOUT_S):
        query.stop()
        raise RuntimeError(f"the demo query did not finish within {_QUERY_TIMEOUT_S} s")
    # pyspark 4 gives progress objects (with .json), 3.5 plain dicts.
    return [json.loads(p.json) if hasattr(p, "json") else dict(p) for p in query.recentProgress]


def batches_of(progress: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The micro-batches that read input (an availableNow query may end with an empty one)."""
    return [batch for batch in progress if batch.get("numInputRows")]


def state_rows(batch: Dict[str, Any]) -> Dict[str, int]:
    """The state rows of each operator after the batch ("dedupe", "count": numRowsTotal)."""
    return {_ROLE_BY_PROGRESS_NAME.get(op["operatorName"], op["operatorName"]): op["numRowsTotal"]
            for op in batch.get("stateOperators", [])}


def rows_text(rows: Dict[str, int]) -> str:
    return ", ".join(f"{role} {count}" for role, count in sorted(rows.items(), key=lambda r: r[0] != "dedupe"))


def print_progress(progress: Sequence[Dict[str, Any]], verbose: bool) -> None:
    """One line per micro-batch: its input rows, duration and state rows per operator; ``verbose``
    adds one line per state operator with every metric of its StreamingQueryProgress entry."""
    for batch in batches_of(progress):
        duration_s = batch["durationMs"]["triggerExecution"] / 1000
        print(f"  batch {batch['batchId']}: {batch['numInputRows']} events, {duration_s:.1f} s; "
              f"state rows: {rows_text(state_rows(batch))}")
        if not verbose:
            continue
        for op in batch.get("stateOperators", []):
            print(
                f"    {op['operatorName']:<15} numRowsTotal={op['numRowsTotal']:<5} "
                f"numRowsUpdated={op['numRowsUpdated']:<5} commitTimeMs={op['commitTimeMs']}"
            )
            custom = ", ".join(f"{k}={v}" for k, v in sorted(op.get("customMetrics", {}).items()))
            print(textwrap.fill(f"customMetrics: {{{custom}}}", width=110, initial_indent=" " * 6,
                                subsequent_indent=" " * 8, break_on_hyphens=False))


def provider_in_checkpoint(checkpoint: Path) -> Optional[str]:
    """The provider class Spark recorded in the newest offset log entry of the checkpoint."""
    offsets = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    if not offsets:
        return None
    newest = max(offsets, key=lambda p: int(p.name))
    for line in newest.read_text().splitlines():
        if line.startswith("{") and '"conf"' in line:
            conf: Dict[str, str] = json.loads(line).get("conf", {})
            return conf.get(PROVIDER_CLASS_KEY)
    return None


def main(argv: Optional[Sequence[str]] = None, provider_class: str = PROVIDER_CLASS) -> int:
    """Run the demo; return 0 when the counts after the restart and the recorded provider are right.

    ``provider_class`` exists to check the demo itself against another provider (e.g. Spark's
    built-in RocksDB one); run as a script, the demo always uses txstate's.
    """
    parser = argparse.ArgumentParser(prog="demo/streaming_demo.py", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--work-dir", type=Path, help="keep the input files and checkpoint here "
                        "(must not exist yet); default: a temporary directory removed at the end")
    parser.add_argument("--metrics", action="store_true", help="also print every state operator metric "
                        "of every micro-batch (Spark's and the provider's customMetrics), each interactive "
                        "query and the paged scan of the checkpoint")
    args = parser.parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # keep our lines in order with Spark's stderr

    if args.work_dir is not None and args.work_dir.exists():
        parser.error(f"--work-dir {args.work_dir} already exists; pass a new directory")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="txstate-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    input_dir, checkpoint, log4j_file = work / "input", work / "checkpoint", work / "log4j2.properties"
    log4j_file.write_text(_LOG4J2)
    started = time.monotonic()
    verbose = args.metrics
    try:
        rng = random.Random(892)
        delivered: List[Event] = []
        latest: Dict[str, int] = {}
        problems: List[str] = []
        # Interactive queries and the txstate data source read txstate's stores only.
        answers: Optional[Dict[int, Dict[str, int]]] = {} if provider_class == PROVIDER_CLASS else None
        first, second = _FILES_PER_RUN
        write_files(input_dir, 0, generate_files(first, 0, rng, delivered))

        spark = start_session(provider_class, log4j_file)
        print(f"txstate-spark demo on Spark {spark.version}: dropDuplicates(event_id), then "
              f"groupBy(word).count(); {_EVENTS_PER_FILE} events per micro-batch")
        if verbose:
            print(f"  provider {provider_class}, work dir {work}")
        print(f"part 1: a new Spark session runs {first} micro-batches")
        part1 = batches_of(run_query(spark, input_dir, checkpoint, latest, problems, answers, verbose))
        print_progress(part1, verbose)
        spark.stop()
        kept_rows, kept_counts = (state_rows(part1[-1]) if part1 else {}), dict(latest)

        write_files(input_dir, first, generate_files(second, len(delivered), rng, delivered))
        print("part 2: that session stops; a new one restarts the query from the same checkpoint")
        spark = start_session(provider_class, log4j_file)
        if answers is not None:
            found_rows, found_counts = state_in_checkpoint(spark, checkpoint)
            same = found_rows == kept_rows and found_counts == kept_counts
            print(f"  restart: the new session finds state rows {rows_text(found_rows)} and {len(found_counts)} "
                  f"words' counts in the checkpoint, {'the same as' if same else 'NOT the same as'} part 1 ended with")
            if not same:
                problems.append(f"after the restart the checkpoint holds rows {found_rows} and counts "
                                f"{found_counts}; part 1 ended with rows {kept_rows} and counts {kept_counts}")
        part2 = batches_of(run_query(spark, input_dir, checkpoint, latest, problems, answers, verbose))
        print_progress(part2, verbose)
        in_session = spark.conf.get(PROVIDER_CLASS_KEY)
        expected = dict(Counter(word for _, word in delivered))
        if answers is not None:
            scanned = scan_checkpoint(spark, checkpoint, verbose)
            if scanned != expected:
                problems.append(f"the checkpoint scan found {scanned}, expected {expected}")
        spark.stop()

        if answers and not verbose:
            last = max(answers)
            print(f"interactive query during batch {last} (txstate_spark.query, a multi-key lookup in the count's "
                  f"store):\n  {answers[last]}, the counts the stream had emitted by then")
        print("metrics: each batch's StreamingQueryProgress has them per operator (txstate's under "
              "stateOperators[].customMetrics),\n  as has the Spark UI's Structured Streaming tab"
              + ("" if verbose else "; `make demo DEMO_ARGS=--metrics` prints them all"))
        recorded = provider_in_checkpoint(checkpoint)
        counts_ok = latest == expected and not problems
        provider_ok = recorded == provider_class == in_session
        for problem in problems:
            print(f"  check FAILED: {problem}")
        if latest != expected:
            wrong = {w: (latest.get(w), expected.get(w)) for w in sorted(set(latest) | set(expected))
                     if latest.get(w) != expected.get(w)}
            print(f"  word: (streamed, expected) where they differ: {wrong}")
        print(f"{'OK' if counts_ok and provider_ok else 'FAILED'} in {time.monotonic() - started:.0f} s: "
              f"{len(delivered)} distinct events, {len(expected)} words; the counts after the restart "
              f"{'match' if counts_ok else 'DO NOT match'} counts computed in Python;\n  the checkpoint "
              f"records the provider {recorded}")
        if not provider_ok:
            print(f"  provider in the session's spark.conf: {in_session}, asked for: {provider_class}")
        return 0 if counts_ok and provider_ok else 1
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
