"""The state TTL tests' input and reference models (test_state_ttl.py, test_ttl_executor_failure.py).

TTL semantics as Flink's state TTL: at a batch's time (its `batchTimestampMs` from the offset log),
a key not written for the TTL or longer is gone, before the batch reads or writes anything. The
models replay a query over the same input, batch by batch, with the batch times the query's
checkpoint recorded, and say what each batch must emit, how many state rows it must leave and how
many it must expire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

TTL_CONF = "spark.sql.streaming.stateStore.txstate.ttl"

# The keys of one micro-batch, by batch index.
KeysOf = Callable[[int], Sequence[str]]


def rotating_keys(batch: int) -> list[str]:
    """A window of keys sliding by four per batch (half of them new), plus two hot keys every fifth batch.

    Without TTL the state grows by four keys a batch; with it, keys leave once unwritten for the
    TTL, and the hot keys come back after expiring (so deduplication emits them again)."""
    keys = [f"k{batch * 4 + i:04d}" for i in range(8)]
    if batch % 5 == 0:
        keys += ["hot0", "hot1"]
    return keys + keys[:2]  # duplicates inside the batch too


def expire(state: dict[str, Any], written_ms: Callable[[Any], int], now: int, ttl_ms: int | None) -> int:
    """Drops the keys not written for `ttl_ms` or longer at `now`; returns how many."""
    if ttl_ms is None:
        return 0
    gone = [k for k, v in state.items() if now - written_ms(v) >= ttl_ms]
    for k in gone:
        del state[k]
    return len(gone)


@dataclass
class ModelBatch:
    """What one batch must do: its output rows (sorted), the state it leaves (key -> the model's
    entry: write time for deduplication, (count, write time) for the count) and its expired keys."""

    rows: list[tuple]
    state: dict[str, Any]
    expired: int

    @property
    def state_rows(self) -> int:
        return len(self.state)


def dedup_model(
    batch_times: Mapping[int, int], ttl_ms: int | None, keys_of: KeysOf = rotating_keys
) -> dict[int, ModelBatch]:
    """dropDuplicates(["k"]): a key is emitted when absent from state; its state row is written then only."""
    state: dict[str, int] = {}
    model = {}
    for batch in sorted(batch_times):
        now = batch_times[batch]
        expired = expire(state, lambda written: written, now, ttl_ms)
        new = sorted(set(k for k in keys_of(batch) if k not in state))
        for k in new:
            state[k] = now
        model[batch] = ModelBatch([(k,) for k in new], dict(state), expired)
    return model


def count_model(
    batch_times: Mapping[int, int], ttl_ms: int | None, keys_of: KeysOf = rotating_keys
) -> dict[int, ModelBatch]:
    """groupBy("k").count() in update mode: every key of the batch is written, its count restarting after expiry."""
    state: dict[str, tuple[int, int]] = {}
    model = {}
    for batch in sorted(batch_times):
        now = batch_times[batch]
        expired = expire(state, lambda entry: entry[1], now, ttl_ms)
        keys = keys_of(batch)
        occurrences: dict[str, int] = {}
        for k in keys:
            occurrences[k] = occurrences.get(k, 0) + 1
        for k, n in occurrences.items():
            state[k] = (state.get(k, (0, 0))[0] + n, now)
        model[batch] = ModelBatch(sorted((k, state[k][0]) for k in occurrences), dict(state), expired)
    return model
