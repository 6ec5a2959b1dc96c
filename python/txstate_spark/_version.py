"""The package version. It must equal the repository's ``VERSION`` file, which also names the jar.

``make wheel`` refuses to build when the two differ, and ``tests/test_packaging.py`` checks it too.
"""

__version__ = "0.2.0"
