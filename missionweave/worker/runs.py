"""The items this worker runs, shared between the control loop and the slot threads
(R11.1-11, R11.3-03; issue 14 §6).

Why a class of its own: the loop starts, settles and drops runs, while slot threads look
theirs up in their callbacks (a checkpoint, a block). Every access goes through one
re-entrant lock, and the helpers the ``Worker`` hands work to (``item_start``,
``settlement``) take this table instead of the whole worker.
"""

from __future__ import annotations

import threading

from .execution import Running

Key = tuple[str, str]


class RunTable:
    """(Group, WorkItem) -> ``Running``, from ``work.start`` until the item leaves this
    worker's hands; ``lock`` also guards what the stream thread reads (the feeds)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._runs: dict[Key, Running] = {}

    def get(self, key: Key) -> Running | None:
        with self.lock:
            return self._runs.get(key)

    def put(self, key: Key, run: Running) -> None:
        with self.lock:
            self._runs[key] = run

    def pop(self, key: Key) -> None:
        with self.lock:
            self._runs.pop(key, None)

    def keys(self) -> set[Key]:
        with self.lock:
            return set(self._runs)

    def snapshot(self) -> list[Running]:
        with self.lock:
            return list(self._runs.values())
