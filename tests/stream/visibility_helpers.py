"""Helpers of the visibility race test: a writer thread with its own database connection, and
a websocket to the real server read frame by frame.

The writer's thread lives for the whole test, so its PostgreSQL backend (and pid) is the same
in every round: the test can watch that backend wait on the head row lock in
``pg_stat_activity`` instead of sleeping and hoping.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

from django.db import connection, connections, transaction
from websockets.sync.client import ClientConnection, connect

from apps.ledger.write_path import Caller, Outcome, submit_command

STREAM_PATH = "/ws/v1/stream"


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


class Writer:
    """One thread, one database connection, for the whole test."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.backend_pid = self._pool.submit(_backend_pid).result()

    def submit[T](self, function: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        return self._pool.submit(function, *args, **kwargs)

    def close(self) -> None:
        self._pool.submit(connections.close_all).result()
        self._pool.shutdown()


def hold_open(
    *,
    group_id: str,
    document: dict[str, Any],
    caller: Caller,
    appended: threading.Event,
    release: threading.Event,
    committed: threading.Event,
    timeout_s: float,
) -> Outcome:
    """Submit ``document`` inside an outer transaction and keep it open until ``release``.

    The write path's own atomic block becomes a savepoint: the event is appended and the head
    row stays locked, but nothing is committed (and no hint is sent) until this block ends.
    ``committed`` is set right after the commit (see :func:`submit`).
    """
    with transaction.atomic():
        transaction.on_commit(committed.set)
        outcome = submit_command(group_id=group_id, document=document, caller=caller)
        appended.set()
        if not release.wait(timeout_s):
            raise TimeoutError("the test never released the open transaction")
    return outcome


def submit(
    *, group_id: str, document: dict[str, Any], caller: Caller, committed: threading.Event
) -> Outcome:
    """An ordinary command; ``committed`` is set as soon as its transaction commits.

    The callback is registered before the write path registers its hint, and Django runs them
    in that order: the test may go on as soon as the log has moved, while the hint is sent.
    """
    with transaction.atomic():
        transaction.on_commit(committed.set)
        return submit_command(group_id=group_id, document=document, caller=caller)


class StreamSocket:
    """A sync websocket on ``/ws/v1/stream`` authenticated with a session token (wire.md §7)."""

    def __init__(self, ws_url: str, token: str) -> None:
        self._exit = ExitStack()
        self._ws: ClientConnection = self._exit.enter_context(
            connect(
                ws_url.rstrip("/") + STREAM_PATH,
                additional_headers={"Authorization": f"Bearer {token}"},
                open_timeout=10,
            )
        )

    def send(self, frame: dict[str, Any]) -> None:
        self._ws.send(json.dumps(frame))

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next frame; ``TimeoutError`` when none comes within ``timeout_s``."""
        return json.loads(self._ws.recv(timeout=timeout_s))

    def pending(self) -> list[dict[str, Any]]:
        """Every frame that has already arrived, without waiting."""
        frames: list[dict[str, Any]] = []
        while True:
            try:
                frames.append(self.receive(0))
            except TimeoutError:
                return frames

    def close(self) -> None:
        self._exit.close()
