"""``python -m txstate_spark verify CHECKPOINT [--deep]``: exit 0 when sound, 1 naming each damaged file."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from txstate_spark.cli.inspect import ProgressLine, add_common, refuse_missing_local_path
from txstate_spark.jvm_gateway import session_for
from txstate_spark.verification import Verification, verify


def add_verify(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "verify",
        help="read every txstate file of a checkpoint and check that every retained version loads",
        description="Read every txstate file of every store (frames, checksums, stored files), check that "
        "every version within minBatchesToRetain loads from a snapshot plus changelogs and that the lineage "
        "is unbroken. Writes nothing (a read-only file system view). Exit status 0: sound; 1: damaged or "
        "missing files, each named with what Spark would do; 2: not a checkpoint or a bad option.",
    )
    add_common(parser)
    parser.add_argument("--deep", action="store_true",
                        help="also replay each store's newest version and compare its key count with the commit point")
    parser.add_argument("--min-batches-to-retain", type=int, metavar="N",
                        help="versions back that must load (default: the minBatchesToRetain the query's cleanup "
                        "recorded in the checkpoint, else 100)")
    parser.add_argument("--json", action="store_true", help="print the verification as JSON")


def run_verify(args: argparse.Namespace) -> int:
    refuse_missing_local_path(args.checkpoint)
    with session_for(None, dict(args.conf)) as spark:
        result = verify(spark, args.checkpoint, deep=args.deep, min_batches_to_retain=args.min_batches_to_retain,
                        progress=ProgressLine(sys.stderr, "verify"))
    print(json.dumps(asdict(result), indent=2) if args.json else render(result))
    return 0 if result.sound else 1


def render(result: Verification) -> str:
    """The verification as text: the verdict, each finding, what was read."""
    files = sum(c.files_read for c in result.checked)
    verdict = "sound" if result.sound else f"DAMAGED: {len(result.findings)} files"
    lines = [f"{result.checkpoint}: {verdict} ({len(result.checked)} store partitions, {files} files read, "
             f"versions from {max(1, result.version - result.min_batches_to_retain + 1)} to {result.version} "
             f"checked, {result.elapsed_ms} ms)"]
    for f in result.findings:
        lines += [f"  {f.path}", f"    {f.problem}", f"    what Spark does: {f.consequence}"]
    for c in result.checked:
        if c.deep is not None:
            state = "matches" if c.deep.matches else "DIFFERS"
            lines.append(f"  {c.store}, partition {c.partition}: version {c.deep.version} replayed, "
                         f"{c.deep.keys} keys ({state} the commit point's {c.deep.committed_keys}), digest {c.deep.digest}")
    lines += [f"  not checked: {n}" for n in result.not_checked]
    return "\n".join(lines)
