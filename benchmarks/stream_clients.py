"""Websocket subscribers for the stream benchmarks: asyncio, many sockets per process.

Deliberately free of Django: a worker process is *spawned* (not forked from the harness,
whose database connections it must not inherit) and imports only this module and the
``websockets`` client. It is driven over a ``multiprocessing`` pipe:

* the worker opens one socket per token (``Authorization: Bearer``), sends
  ``SUBSCRIBE {group, afterSequence}`` on each and answers ``("connected", opened, failed,
  retries, seconds, first failure)``;
* ``("await", sequence, timeout_s)``: answers ``("reached", sequence, missing)`` once every
  socket has received the EVENT of that sequence (or the timeout passed; ``missing`` counts
  the sockets still without it);
* ``("finish",)``: answers ``("results", receipts, counters)`` and exits, where ``receipts``
  maps each sequence to the ``time.time_ns()`` of its arrival on each socket.

The clock is the wall clock (``CLOCK_REALTIME``), the one clock every process on the machine
shares, so a receipt here and an acceptance in the harness are comparable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import websockets

CONNECT_CONCURRENCY = 25  # handshakes in flight at once: each costs the server a token lookup
CONNECT_TIMEOUT_S = 60.0
CONNECT_ATTEMPTS = 5
RETRY_PAUSE_S = 1.0


@dataclass(frozen=True)
class SubscriberSpec:
    """What one worker process subscribes: ``len(tokens)`` sockets spread over ``urls``."""

    urls: tuple[str, ...]  # ws://host:port/ws/v1/stream, one per server, used round-robin
    tokens: tuple[str, ...]
    group: str
    after: int


@dataclass
class _State:
    sockets: int
    receipts: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    arrived: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    waiters: dict[int, asyncio.Event] = field(default_factory=dict)
    errors: int = 0
    retries: int = 0  # handshakes tried again after a refusal
    out_of_order: int = 0
    closed: int = 0
    first_error: str = ""

    def record(self, sequence: int, at_ns: int) -> None:
        self.receipts[sequence].append(at_ns)
        self.arrived[sequence] += 1
        waiter = self.waiters.get(sequence)
        if waiter is not None and self.arrived[sequence] >= self.sockets:
            waiter.set()


async def _read(socket: Any, state: _State) -> None:
    last = -1
    try:
        async for frame in socket:
            at_ns = time.time_ns()
            message = json.loads(frame)
            if message.get("op") != "EVENT":
                state.errors += 1
                state.first_error = state.first_error or str(frame)[:300]
                continue
            sequence = message["event"]["sequence"]
            if sequence <= last:
                state.out_of_order += 1
            last = sequence
            state.record(sequence, at_ns)
    except websockets.ConnectionClosed:
        pass
    state.closed += 1


async def _open(
    url: str, token: str, spec: SubscriberSpec, gate: asyncio.Semaphore, state: _State
) -> Any | BaseException:
    """Open and subscribe one socket; a refused handshake is retried after a pause, as a
    reconnecting client would (daphne drops handshakes it cannot finish in 5 s)."""
    error: BaseException | None = None
    for attempt in range(CONNECT_ATTEMPTS):
        if attempt:
            state.retries += 1
            await asyncio.sleep(RETRY_PAUSE_S * attempt)
        async with gate:
            try:
                socket = await websockets.connect(
                    url,
                    additional_headers={"Authorization": f"Bearer {token}"},
                    open_timeout=CONNECT_TIMEOUT_S,
                    ping_interval=None,  # no keep-alive traffic of ours in the measurement
                    max_size=None,
                    max_queue=None,  # never stop reading: a replay sends as fast as it can
                )
            except Exception as failure:  # retried, then reported as a failed socket
                error = failure
                continue
            await socket.send(
                json.dumps({"op": "SUBSCRIBE", "group": spec.group, "afterSequence": spec.after})
            )
            return socket
    assert error is not None
    return error


async def _serve(conn: Connection, spec: SubscriberSpec) -> None:
    loop = asyncio.get_running_loop()
    state = _State(sockets=len(spec.tokens))
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    started = time.perf_counter()
    opened = await asyncio.gather(
        *(
            _open(spec.urls[index % len(spec.urls)], token, spec, gate, state)
            for index, token in enumerate(spec.tokens)
        )
    )
    sockets = [s for s in opened if not isinstance(s, BaseException)]
    failed = [s for s in opened if isinstance(s, BaseException)]
    state.sockets = len(sockets)
    readers = [asyncio.create_task(_read(socket, state)) for socket in sockets]
    detail = repr(failed[0])[:300] if failed else ""
    seconds = time.perf_counter() - started
    conn.send(("connected", len(sockets), len(failed), state.retries, seconds, detail))
    while True:
        command = await loop.run_in_executor(None, conn.recv)
        if command[0] == "await":
            _, sequence, timeout_s = command
            waiter = state.waiters.setdefault(sequence, asyncio.Event())
            if state.arrived[sequence] >= state.sockets:
                waiter.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), timeout_s)
            conn.send(("reached", sequence, state.sockets - state.arrived[sequence]))
        elif command[0] == "finish":
            for socket in sockets:
                await socket.close()
            await asyncio.gather(*readers, return_exceptions=True)
            counters = {
                "errors": state.errors,
                "out_of_order": state.out_of_order,
                "first_error": state.first_error,
            }
            conn.send(("results", dict(state.receipts), counters))
            return


def run_worker(conn: Connection, spec: SubscriberSpec) -> None:
    """The worker process's entry point (``multiprocessing`` spawn target)."""
    try:
        asyncio.run(_serve(conn, spec))
    finally:
        conn.close()


async def replay_count(
    url: str, token: str, group: str, head: int, *, batch: bool = False
) -> tuple[int, float, int]:
    """Subscribe after 0 and count events until the one of ``head`` arrives.

    Returns (events, seconds from SUBSCRIBE to the head's frame, last sequence). One socket
    gets a group's events in order and without gaps (wire.md §7), so events ending at
    sequence ``head`` are exactly 1..head. Per ``EVENT`` frame only the count is kept (the
    last frame is parsed to check it is the head's); with ``batch`` (``EVENTS`` frames) a
    frame's ``last`` is read from its end, without decoding its events, as the REST reader
    reads ``next_after``.
    """
    async with websockets.connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}"},
        ping_interval=None,
        max_size=None,
        max_queue=None,
    ) as socket:
        started = time.perf_counter()
        subscribe = {"op": "SUBSCRIBE", "group": group, "afterSequence": 0}
        await socket.send(json.dumps({**subscribe, "batch": True} if batch else subscribe))
        events = 0
        last: str | bytes = ""
        if batch:
            sequence = 0
            while sequence < head:
                last = await socket.recv()
                sequence = _frame_last(last)
            elapsed = time.perf_counter() - started
            return sequence, elapsed, sequence
        while events < head:
            last = await socket.recv()
            events += 1
        elapsed = time.perf_counter() - started
    message = json.loads(last) if last else {}
    event = message.get("event", {}) if message.get("op") == "EVENT" else {}
    sequence = event.get("sequence", -1)
    return events, elapsed, int(sequence)


#: the end of an ``EVENTS`` frame: ``…],"last":N}``
_FRAME_LAST = re.compile(r'"last":(\d+)\}$')


def _frame_last(frame: str | bytes) -> int:
    text = frame if isinstance(frame, str) else frame.decode()
    match = _FRAME_LAST.search(text, max(0, len(text) - 32))
    return int(match.group(1)) if match else int(json.loads(text)["last"])
