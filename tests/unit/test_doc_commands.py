"""Every shell command of the README and the guide's getting-started page runs as written.

Each line of their ``bash`` and ``sh`` blocks is one of: a ``make`` target of the Makefile; a
``python -m txstate_spark`` command line (alone or inside ``$(...)``), parsed by the real parser,
whose type checks validate setting names and values; a ``spark-submit`` whose txstate settings and
provider class are checked; or a command a named test runs (``COVERED``). Anything else fails, so a
new command in these pages needs a rule or a test. No JVM, no network: a second.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from txstate_spark.cli import build_parser
from txstate_spark.constants import PROVIDER_CLASS, PROVIDER_CLASS_KEY
from txstate_spark.settings.values import checked_spark_conf

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/getting-started.md")
MODULE = "python -m txstate_spark"
# Commands no rule here can run, each with the test that runs it and a text that test contains.
COVERED = {
    "pip install dist/txstate_spark-": ("tests/test_packaging.py", '"pip", "--python", python, "install"'),
    "curl -s http://127.0.0.1:8470/v1/query": ("tests/test_serving.py", '"POST", "/v1/query"'),
}


def shell_lines(page: str) -> Iterator[Tuple[str, str]]:
    """(page, command) for each command of the page's bash/sh blocks, continuations joined, comments cut."""
    text = (ROOT / page).read_text()
    for block in re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                yield page, re.sub(r"\s+", " ", line)


COMMANDS: List[Tuple[str, str]] = [entry for page in PAGES for entry in shell_lines(page)]


def make_targets() -> set:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):(?!=)", (ROOT / "Makefile").read_text(), flags=re.M))


def module_calls(command: str) -> List[List[str]]:
    """The argument lists of every ``python -m txstate_spark`` call in ``command``."""
    calls = re.findall(r"\$\(" + re.escape(MODULE) + r"([^)]*)\)", command)
    if command.startswith(MODULE):
        calls.append(command[len(MODULE):])
    return [shlex.split(call) for call in calls]


def test_the_pages_have_commands_to_check() -> None:
    assert {page for page, _ in COMMANDS} == set(PAGES)
    assert any(command.startswith("make demo") for _, command in COMMANDS)


@pytest.mark.parametrize("page,command", COMMANDS, ids=[f"{p}: {c[:60]}" for p, c in COMMANDS])
def test_a_documented_command_runs_as_written(page: str, command: str) -> None:
    words = shlex.split(command.replace("$(", "").replace(")", "")) if command.startswith("spark-submit") else None
    if command.startswith("make "):
        target, *variables = command.split()[1:]
        assert target in make_targets(), f"{page}: `{command}`: the Makefile has no target {target}"
        assert all(re.fullmatch(r"[A-Z_]+=\S+", v) for v in variables), f"{page}: `{command}`"
    elif not module_calls(command) and words is None and not any(command.startswith(p) for p in COVERED):
        pytest.fail(f"{page}: `{command}` is not checked: add a rule to {__name__}, or name the test that runs "
                    "it in COVERED")
    for args in module_calls(command):
        try:
            build_parser().parse_args(args)
        except SystemExit as exit:  # argparse's way to refuse (exit 2) or to print --help (exit 0)
            pytest.fail(f"{page}: `{command}`: python -m txstate_spark refuses {args} (exit {exit.code})")
    if words is not None:  # spark-submit: its settings as the jar will read them, and the provider selected
        conf = [words[i + 1].split("=", 1) for i, word in enumerate(words[:-1]) if word == "--conf"]
        checked_spark_conf([(key, value) for key, value in conf])
        provider = [value for key, value in conf if key == PROVIDER_CLASS_KEY]
        assert provider == [PROVIDER_CLASS] or (not provider and any(
            args[:1] == ["submit-args"] for args in module_calls(command))), f"{page}: `{command}` selects no provider"
    if command.startswith("curl"):
        body = json.loads(shlex.split(command)[-1])
        assert body["query"]["type"] in ("key", "multiKey", "range", "prefix", "scan")  # HttpApi.queryTypes


@pytest.mark.parametrize("prefix", sorted(COVERED))
def test_the_test_named_for_a_command_runs_it(prefix: str) -> None:
    test_file, marker = COVERED[prefix]
    assert marker in (ROOT / test_file).read_text(), f"{test_file} no longer runs `{prefix}...`"
