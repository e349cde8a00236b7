"""A hint reaches the group's tail without waiting for the database thread (wire.md §7).

Channels' own ``dispatch`` first runs ``close_old_connections`` on the one thread that also
runs the process's database reads. A hint goes to every subscribed socket, so at 1,000 sockets
one event queued 1,000 such hops in front of the tail's read of it (docs/benchmarks.md §7).
``StreamConsumer.dispatch`` hands a message straight to its handler; these tests hold the
database thread busy and check that the hint still arrives.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async

from apps.stream.consumers import StreamConsumer

GROUP = "grp_dispatch"


class _RecordingTail:
    """Stands in for a ``GroupTail``: remembers the heads it was woken with."""

    def __init__(self) -> None:
        self.woken: list[int | None] = []

    def wake(self, head: int | None = None) -> None:
        self.woken.append(head)


def _subscribed_consumer(tail: _RecordingTail) -> StreamConsumer:
    consumer = StreamConsumer()
    consumer.tails = {GROUP: tail}  # type: ignore[dict-item]
    consumer.cursors = {GROUP: 0}
    return consumer


async def test_a_hint_wakes_the_tail_while_the_database_thread_is_busy() -> None:
    tail = _RecordingTail()
    consumer = _subscribed_consumer(tail)
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)(10))
    await asyncio.sleep(0.05)  # the database thread is now inside release.wait
    try:
        await asyncio.wait_for(
            consumer.dispatch({"type": "group.head", "group": GROUP, "head": 7}), timeout=2
        )
    finally:
        release.set()
        await busy
    assert tail.woken == [7]


async def test_a_message_with_no_handler_is_refused_by_name() -> None:
    consumer = _subscribed_consumer(_RecordingTail())
    with pytest.raises(ValueError, match=r"group\.unknown"):
        await consumer.dispatch({"type": "group.unknown"})
