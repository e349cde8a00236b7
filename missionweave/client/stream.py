"""Following ``/ws/v1/stream`` with reconnects from the durable cursor (wire.md §7, R16-09).

The stream is a transport only: every ``EVENT`` goes through ``EventFeed.deliver``, which
verifies the chain, drops duplicates by event id and never moves the cursor over a gap
(R16-02, R16-03, R16-05). On a lost connection the follower reconnects and subscribes again
with ``afterSequence`` = the durable cursor, so events processed before the break are not
handled twice and events after it are not lost; the duplicates the server may resend around
the break (R16-09) are dropped. The follower reports its durable cursors in an ``ACK`` frame
(R16-07) at most every ``ack_every_s`` while events flow and as soon as the socket is idle, so
a burst of events costs the authority one cursor write, not one per event; acknowledging never
deletes history (R16-08).

``CURSOR_TOO_OLD`` for a group makes its feed restore the verified snapshot the frame names
and subscribe again after the snapshot's sequence (wire.md §7, R16-10). A frame that does not
parse, or an ``EVENT`` of a group not subscribed here, is corruption in transit: it is refused
(``ChainBroken``) rather than skipped, naming the first sequence not yet verified.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.strictjson import parse as parse_json

from .agent import AgentClient
from .errors import ChainBroken, ClientError
from .feed import EventFeed

STREAM_PATH = "/ws/v1/stream"


class StreamError(ClientError):
    """An ``ERROR`` frame for a group this follower cannot continue (``CURSOR_TOO_OLD`` carries
    the snapshot reference to restore from, wire.md §7; ``NOT_A_MEMBER`` after a revocation)."""

    def __init__(self, frame: dict[str, Any]) -> None:
        super().__init__(f"{frame.get('code')} for group {frame.get('group')!r}: {frame}")
        self.code = str(frame.get("code", ""))
        self.group = frame.get("group")
        self.snapshot = frame.get("snapshot")
        self.frame = frame


class StreamFollower:
    """Subscribe ``feeds`` (several groups on one socket) and process their events.

    ``run(until=...)`` returns when ``until()`` is true; it reconnects on any connection
    loss (at most ``max_reconnects`` times in a row without progress)."""

    def __init__(
        self,
        client: AgentClient,
        ws_url: str,
        feeds: Iterable[EventFeed],
        *,
        ack: bool = True,
        ack_every_s: float = 0.25,
        reconnect_delay_s: float = 0.2,
        max_reconnects: int = 20,
        origin: str | None = None,
    ) -> None:
        self.client = client
        self.url = ws_url.rstrip("/") + STREAM_PATH
        self.feeds = {feed.group: feed for feed in feeds}
        self.ack = ack
        self.ack_every_s = ack_every_s
        self._acked: dict[str, int] = {}
        self._acked_at = 0.0
        self.reconnect_delay_s = reconnect_delay_s
        self.max_reconnects = max_reconnects
        self.origin = origin
        self.connections = 0  # how many sockets were opened (tests observe reconnects)
        self._socket: ClientConnection | None = None
        self._lock = threading.Lock()

    def disconnect(self) -> None:
        """Drop the current socket (as a network failure would); ``run`` reconnects."""
        with self._lock:
            if self._socket is not None:
                self._socket.close()

    def run(self, until: Callable[[], bool], *, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        failures = 0
        while not until():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the stream did not reach the condition in {timeout_s} s")
            before = self._cursors()
            try:
                self._follow(until, deadline)
                failures = 0
            except (ConnectionClosed, InvalidHandshake, OSError) as error:
                # a dropped socket, a handshake an overloaded server did not finish, or one
                # still refused after renewing the session: retried, up to max_reconnects in
                # a row; a connection that moved a cursor before it broke was progress
                failures = 1 if self._cursors() != before else failures + 1
                if failures > self.max_reconnects:
                    raise ClientError(f"stream lost {failures} times in a row") from error
                time.sleep(self.reconnect_delay_s)

    def _open(self) -> ClientConnection:
        """Handshake with the session token; a refused handshake (a replaced session,
        R11.3-10) renews the session — unless another thread already did — and tries again."""
        for attempt in range(3):
            session = self.client.current_session()
            try:
                headers = {"Authorization": f"Bearer {session.token}"}
                if self.origin:
                    headers["Origin"] = self.origin
                return connect(self.url, additional_headers=headers, open_timeout=10)
            except InvalidStatus:
                if attempt == 2:
                    raise
                self.client.renew_session(session.token)
        raise AssertionError("unreachable")

    def _follow(self, until: Callable[[], bool], deadline: float) -> None:
        with self._open() as socket:  # closes the socket however the loop ends
            with self._lock:
                self._socket = socket
            self.connections += 1
            try:
                for feed in self.feeds.values():
                    self._subscribe(socket, feed)
                while not until() and time.monotonic() <= deadline:
                    try:
                        text = socket.recv(timeout=0.2)
                    except TimeoutError:
                        self._acknowledge(socket, idle=True)
                        continue
                    self.handle_text(socket, text)
                self._acknowledge(socket, idle=True)
            finally:
                with self._lock:
                    self._socket = None

    def _subscribe(self, socket: ClientConnection, feed: EventFeed) -> None:
        """R16-09: resume after the DURABLE cursor, not after what was received."""
        frame = {"op": "SUBSCRIBE", "group": feed.group, "afterSequence": feed.cursor}
        socket.send(json.dumps(frame))

    def handle_text(self, socket: ClientConnection, text: str | bytes) -> None:
        """Parse one frame strictly and act on it; an unreadable frame is refused."""
        try:
            frame = parse_json(text)
        except ProtocolError as error:
            raise self._corrupt(f"an unreadable frame: {error.message}") from None
        if not isinstance(frame, dict):
            raise self._corrupt("a frame that is not an object")
        self.handle_frame(socket, frame)

    def _corrupt(self, reason: str) -> ChainBroken:
        """A frame that cannot be attributed to a subscribed group: it names the only feed's
        next sequence if there is one feed, else the lowest unverified position of them all
        (``group`` ``None``)."""
        if len(self.feeds) == 1:
            feed = next(iter(self.feeds.values()))
            return ChainBroken(feed.group, feed.cursor + 1, reason)
        return ChainBroken(None, min(f.cursor for f in self.feeds.values()) + 1, reason)

    def handle_frame(self, socket: ClientConnection, frame: dict[str, Any]) -> None:
        """Act on one server frame (public so a caller with its own socket loop can use it)."""
        op = frame.get("op")
        if op == "EVENT":
            event = frame.get("event")
            if not isinstance(event, dict):
                raise self._corrupt("an EVENT frame without an event object")
            feed = self.feeds.get(event.get("group"))  # type: ignore[arg-type]
            if feed is None:
                # the server sends only subscribed groups: a foreign group name is corruption
                raise self._corrupt(f"an EVENT of group {event.get('group')!r}")
            if feed.deliver(event) == 0 and feed.buffered:
                # R16-05: a gap on the stream is filled from the log, never skipped
                feed.catch_up()
            self._acknowledge(socket, idle=False)
        elif op == "ERROR":
            code, group = frame.get("code"), frame.get("group")
            if code == "ACK_BEYOND_HEAD":
                return  # cannot happen for a durable cursor; never fatal for delivery
            feed = self.feeds.get(group) if isinstance(group, str) else None
            if code == "CURSOR_TOO_OLD" and feed is not None:
                # R16-10: restore the verified snapshot, then follow from its sequence
                feed.restore(frame.get("snapshot"))
                self._subscribe(socket, feed)
                return
            raise StreamError(frame)
        # ACKED and unknown ops carry nothing the follower must act on

    def _acknowledge(self, socket: ClientConnection, *, idle: bool) -> None:
        """Send the durable cursors that moved since the last ``ACK`` (R16-07): at once when
        the socket is idle, else when ``ack_every_s`` has passed since the last one."""
        if not self.ack:
            return
        cursors = self._cursors()
        if cursors == self._acked:
            return
        now = time.monotonic()
        if not idle and now - self._acked_at < self.ack_every_s:
            return
        socket.send(json.dumps({"op": "ACK", "cursors": cursors}))
        self._acked, self._acked_at = cursors, now

    def _cursors(self) -> dict[str, int]:
        return {group: feed.cursor for group, feed in self.feeds.items() if feed.cursor > 0}
