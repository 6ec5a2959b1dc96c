"""``spark.plugins`` with txstate's executor metrics plugin appended to what a user already lists."""

from __future__ import annotations

from typing import Optional

from txstate_spark.constants import PLUGIN_CLASS


def with_plugin(plugins: Optional[str]) -> str:
    """The comma-separated ``spark.plugins`` value ``plugins`` with ``txstate.spark.TxStatePlugin`` appended.

    The user's plugins keep their order; ours is added once (Spark refuses a plugin listed twice).
    """
    entries = [entry.strip() for entry in (plugins or "").split(",") if entry.strip()]
    if PLUGIN_CLASS not in entries:
        entries.append(PLUGIN_CLASS)
    return ",".join(entries)
