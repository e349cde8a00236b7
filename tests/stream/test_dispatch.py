"""A client's frame is handled without waiting for the database thread (wire.md §7).

Channels' own ``dispatch`` first runs ``close_old_connections`` on the one thread that also
runs the process's database reads; when every socket received the hints, 1,000 sockets queued
1,000 such hops per event in front of the tail's read (docs/benchmarks.md §7).
``StreamConsumer.dispatch`` hands a message straight to its handler; these tests hold the
database thread busy and check that a frame is still answered.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from apps.stream.consumers import StreamConsumer


def _consumer(sent: list[dict[str, Any]]) -> StreamConsumer:
    consumer = StreamConsumer()

    async def base_send(message: dict[str, Any]) -> None:
        sent.append(message)

    consumer.base_send = base_send
    return consumer


async def test_a_frame_is_answered_while_the_database_thread_is_busy() -> None:
    """wire§7: a frame that is not JSON gets its ERROR MALFORMED though every database call
    of the process would wait."""
    sent: list[dict[str, Any]] = []
    consumer = _consumer(sent)
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)(10))
    await asyncio.sleep(0.05)  # the database thread is now inside release.wait
    try:
        await asyncio.wait_for(
            consumer.dispatch({"type": "websocket.receive", "text": "not json"}), timeout=2
        )
    finally:
        release.set()
        await busy
    assert [json.loads(message["text"])["code"] for message in sent] == ["MALFORMED"]


async def test_a_message_with_no_handler_is_refused_by_name() -> None:
    consumer = _consumer([])
    with pytest.raises(ValueError, match=r"group\.unknown"):
        await consumer.dispatch({"type": "group.unknown"})
