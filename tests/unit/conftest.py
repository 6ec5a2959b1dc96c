"""The unit tests need no fixture, only tests/ on sys.path (for harness.schemas). tests/conftest.py
puts it there when pytest roots at the repository or at tests/; this covers `pytest <path>/tests/unit`
run from anywhere else, where pytest does not load tests/conftest.py."""

import sys
from pathlib import Path

TESTS_DIR = str(Path(__file__).resolve().parents[1])
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
