"""The agent client against a real server serving the real API.

Sessions (wire.md §5, R11.3-10), signed commands retried under the same id (wire.md §3
step 5), typed refusals (wire.md §8), and the verified, deduplicated, in-order event feed with
durable SQLite cursors (R16-01, R16-02, R16-03, R16-04, R16-05, R16-06; MWP-WRK-029/030).
Faults — a lost answer, a 503, a tampered event — are injected by a transport that wraps the
real HTTP transport, so the server and database underneath are always the real ones.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from apps.stream.models import Cursor
from missionweave.client import (
    AgentClient,
    ApiError,
    ChainBroken,
    CursorStore,
    EventFeed,
    StreamFollower,
    Unavailable,
)
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.events import event_hash
from tests import factories
from tests.factories import World, build_world, mission_body
from tests.live_server import LiveServer

Rewrite = Callable[[httpx.Request, httpx.Response], httpx.Response]


@pytest.fixture
def live_world(transactional_db: None) -> World:
    """Committed, so the server process sees it (the live_server pattern)."""
    return build_world()


class Wrapping(httpx.BaseTransport):
    """The real HTTP transport with a hook on each exchange (fault injection)."""

    def __init__(self, rewrite: Rewrite) -> None:
        self.inner = httpx.HTTPTransport()
        self.rewrite = rewrite
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = self.inner.handle_request(request)
        response.read()
        return self.rewrite(request, response)

    def close(self) -> None:
        self.inner.close()


def _client(server: LiveServer, world: World, **kwargs: Any) -> AgentClient:
    return AgentClient(server.url, "w1", world.w1.key, sleep=lambda _s: None, **kwargs)


def _events(client: AgentClient, group: str) -> list[dict[str, Any]]:
    return client.get_json(f"/groups/{group}/events", params={"after": 0, "limit": 1000})["events"]


def test_open_session_keeps_token_epoch_and_memberships(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """wire.md §5: a new session raises the session epoch; memberships map each group onto
    roles and epoch, and GET /sessions/current reads them again."""
    with _client(live_asgi_server, live_world) as client:
        session = client.open_session()
        assert session.epoch == live_world.w1.session_epoch + 1
        assert session.token
        membership = session.memberships[live_world.group]
        assert membership.roles == ("coordinator",)
        assert membership.epoch == live_world.w1.membership_epochs[live_world.group]
        assert client.refresh_memberships() == session.memberships


def test_submit_signs_with_the_current_epochs(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """wire.md §3: the envelope is signed and carries the current session and membership
    epochs, so the authority accepts it (201 with its events)."""
    with _client(live_asgi_server, live_world) as client:
        result = client.submit(live_world.group, "mission.create", mission_body("m-1"))
        assert result.status == 201
        assert not result.replayed
        assert [e["type"] for e in result.events] == ["mission.created"]
        assert result.body["command_id"] == result.command_id


def test_resending_the_same_command_id_is_a_replay(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """wire.md §3 step 5: the same id and content, re-signed with a fresh issued_at, returns
    the stored answer with Idempotent-Replayed and appends nothing."""
    with _client(live_asgi_server, live_world) as client:
        first = client.submit(live_world.group, "mission.create", mission_body("m-1"), "cmd-a")
        again = client.submit(live_world.group, "mission.create", mission_body("m-1"), "cmd-a")
        assert again.replayed
        assert (again.status, again.body) == (first.status, first.body)
        created = [e for e in _events(client, live_world.group) if e["command_id"] == "cmd-a"]
        assert len(created) == 1


def test_a_lost_answer_is_retried_under_the_same_id(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """wire.md §3 step 5: the server accepted the command but the answer was lost; the
    client retries the SAME command id and gets the replayed answer, one event only."""
    lost = {"done": False}

    def lose_first_answer(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path.endswith("/commands") and not lost["done"]:
            lost["done"] = True
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response

    transport = Wrapping(lose_first_answer)
    with _client(live_asgi_server, live_world, transport=transport) as client:
        result = client.submit(live_world.group, "mission.create", mission_body("m-1"))
        assert result.replayed
        assert result.status == 201
        sent = [r for r in transport.requests if r.url.path.endswith("/commands")]
        ids = {json.loads(r.content)["id"] for r in sent}
        assert len(sent) == 2
        assert ids == {result.command_id}
        created = [e for e in _events(client, live_world.group) if e["type"] == "mission.created"]
        assert len(created) == 1


def test_a_5xx_is_retried_and_persistent_failure_is_unavailable(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """Every refusal is a 4xx (wire.md §8), so a 5xx is a fault of the path and is retried
    with backoff; after the last attempt the client raises Unavailable, never a refusal."""
    failures = {"left": 2}

    def flaky(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path.endswith("/commands") and failures["left"] > 0:
            failures["left"] -= 1
            return httpx.Response(503, json={"detail": "overloaded"})
        return response

    with _client(live_asgi_server, live_world, transport=Wrapping(flaky)) as client:
        result = client.submit(live_world.group, "mission.create", mission_body("m-1"))
        assert result.status == 201

    def down(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path.endswith("/commands"):
            return httpx.Response(502)
        return response

    with (
        _client(live_asgi_server, live_world, transport=Wrapping(down), max_attempts=3) as client,
        pytest.raises(Unavailable),
    ):
        client.submit(live_world.group, "mission.create", mission_body("m-2"))


def test_a_full_artifact_store_is_refused_at_once_not_retried(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """Issue 16 §8: 507 ``STORAGE_FULL`` is a server fault that waiting does not mend (room
    is made by an operator), so the upload raises it after one request instead of retrying
    like a 503."""
    body = ProtocolError(ErrorCode.STORAGE_FULL, "the artifact store is full").as_body()

    def full(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if request.url.path.startswith("/api/v1/artifacts/"):
            return httpx.Response(507, json=body)
        return response

    transport = Wrapping(full)
    with _client(live_asgi_server, live_world, transport=transport) as client:
        with pytest.raises(ApiError) as refused:
            client.upload(b"no room for this")
        assert (refused.value.status, refused.value.code) == (507, "STORAGE_FULL")
        puts = [r for r in transport.requests if r.method == "PUT"]
        assert len(puts) == 1


def test_a_stale_session_is_reopened_and_the_command_resent(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """R11.3-10, wire.md §4: a newer session of the same agent makes this token answer 401
    STALE_SESSION; the client opens a new session and resends the command."""
    with (
        _client(live_asgi_server, live_world) as client,
        _client(live_asgi_server, live_world) as other,
    ):
        old = client.open_session()
        newer = other.open_session()
        assert newer.epoch == old.epoch + 1
        result = client.submit(live_world.group, "mission.create", mission_body("m-1"))
        assert result.status == 201
        assert client.session is not None
        assert client.session.epoch == newer.epoch + 1


def test_a_refusal_raises_a_typed_error(live_asgi_server: LiveServer, live_world: World) -> None:
    """wire.md §8: a 4xx is not retried; it raises ApiError with the code, the R-ID or wire
    section, and the details."""
    with _client(live_asgi_server, live_world) as client:
        with pytest.raises(ApiError) as unknown:
            client.submit(live_world.group, "mission.teleport", {})
        assert (unknown.value.status, unknown.value.code) == (400, "UNKNOWN_COMMAND")
        assert unknown.value.requirement == "wire§9"
        assert unknown.value.details == {"type": "mission.teleport"}
        factories.group("g-elsewhere", live_world.org)
        with pytest.raises(ApiError) as outsider:
            client.submit("g-elsewhere", "mission.create", mission_body("m-9"))
        assert (outsider.value.status, outsider.value.code) == (403, "NOT_A_MEMBER")
        assert outsider.value.requirement


def _missions(client: AgentClient, group: str, count: int, start: int = 1) -> None:
    for number in range(start, start + count):
        client.submit(group, "mission.create", mission_body(f"m-{number}"))


def test_the_feed_reads_every_event_in_order_with_the_chain_verified(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """R16-03, wire.md §6: pages of GET /events are handed over in sequence order, each
    event's hash and prev_hash verified against the stored last hash; the durable cursor
    ends at the head (R16-06)."""
    seen: list[dict[str, Any]] = []
    with _client(live_asgi_server, live_world) as client:
        _missions(client, live_world.group, 5)
        head = client.get_json(f"/groups/{live_world.group}/head")["sequence"]
        store = CursorStore(tmp_path / "cursors.sqlite")
        feed = EventFeed(client, store, live_world.group, seen.append)
        assert feed.catch_up(limit=2) == head
        assert [e["sequence"] for e in seen] == list(range(1, head + 1))
        assert store.position(live_world.group) == (head, seen[-1]["hash"])
        assert feed.catch_up() == 0  # nothing new, nothing twice


def test_a_tampered_event_is_refused_naming_its_sequence(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """wire.md §6: one flipped byte is refused by the client, which names the first bad
    sequence; the handler never sees it and the cursor stays before it (R16-05)."""
    with _client(live_asgi_server, live_world) as client:
        _missions(client, live_world.group, 3)

    def flip_a_byte(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if not request.url.path.endswith("/events"):
            return response
        page = response.json()
        for event in page["events"]:
            if event["sequence"] == 5:
                goal = event["payload"]["goal"]
                event["payload"]["goal"] = chr(ord(goal[0]) ^ 1) + goal[1:]
        return httpx.Response(response.status_code, json=page)

    seen: list[int] = []
    with _client(live_asgi_server, live_world, transport=Wrapping(flip_a_byte)) as client:
        feed = EventFeed(
            client,
            CursorStore(tmp_path / "c.sqlite"),
            live_world.group,
            lambda e: seen.append(e["sequence"]),
        )
        with pytest.raises(ChainBroken) as broken:
            feed.catch_up()
        assert broken.value.sequence == 5
        assert "hash" in broken.value.reason
        assert seen == [1, 2, 3, 4]
        assert feed.cursor == 4


def test_restart_from_the_sqlite_cursor_continues_without_duplicates(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """R16-01, R16-02, R16-06: a restarted agent reads its cursor from the SQLite file and
    continues after it; a handler that fails leaves the cursor before that event, so the
    event is delivered again after the restart and nothing is delivered twice otherwise."""
    path = tmp_path / "cursors.sqlite"
    group = live_world.group
    handled: list[str] = []
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 2)

        def crash_on_fifth(event: dict[str, Any]) -> None:
            if event["sequence"] == 5:
                raise RuntimeError("agent crashed while handling")
            handled.append(event["event_id"])

        store = CursorStore(path)
        with pytest.raises(RuntimeError):
            EventFeed(client, store, group, crash_on_fifth).catch_up()
        assert store.cursor(group) == 4  # persisted only after the handler returned
        store.close()

        _missions(client, group, 2, start=3)
        restarted = CursorStore(path)
        assert restarted.cursor(group) == 4
        feed = EventFeed(client, restarted, group, lambda e: handled.append(e["event_id"]))
        feed.catch_up()
        every = _events(client, group)
        assert handled == [e["event_id"] for e in every]  # each once, in order
        assert restarted.cursors() == {group: every[-1]["sequence"]}


def test_the_cursor_never_advances_over_a_gap(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """R16-04, R16-05, R16-02: an event beyond a gap is buffered, the cursor waits; the
    missing one releases both in order; redelivered events are dropped by event id, and an
    event claiming an already processed sequence with another id is refused."""
    handled: list[int] = []
    with _client(live_asgi_server, live_world) as client:
        _missions(client, live_world.group, 2)
        events = _events(client, live_world.group)
        feed = EventFeed(
            client,
            CursorStore(tmp_path / "c.sqlite"),
            live_world.group,
            lambda e: handled.append(e["sequence"]),
        )
        assert feed.deliver(events[0]) == 1
        assert feed.deliver(events[2]) == 0
        assert feed.cursor == 1  # not over the gap at 2
        assert feed.deliver(events[0]) == 0  # a duplicate
        assert feed.deliver(events[1]) == 2
        assert handled == [1, 2, 3]
        assert feed.cursor == 3
        assert feed.duplicates == 1
        forged = {**events[1], "event_id": "evt-forged"}
        with pytest.raises(ChainBroken) as tampered:
            feed.deliver(forged)  # its hash no longer matches: nothing it claims is trusted
        assert tampered.value.sequence == 4
        forged["hash"] = event_hash(forged)  # well formed, but not what was processed at 2
        with pytest.raises(ChainBroken) as broken:
            feed.deliver(forged)
        assert broken.value.sequence == 2


def _acked(principal: str, group: str, sequence: int, within_s: float = 5.0) -> int | None:
    """The server-side stored cursor once it reached ``sequence`` (ACK is asynchronous)."""
    deadline = time.monotonic() + within_s
    stored = None
    while time.monotonic() < deadline:
        stored = (
            Cursor.objects.filter(principal=principal, group_id=group)
            .values_list("sequence", flat=True)
            .first()
        )
        if stored is not None and stored >= sequence:
            return stored
        time.sleep(0.05)
    return stored


def test_the_stream_delivers_live_events_across_a_reconnect_exactly_once(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """wire.md §7, R16-09, R16-02, R16-05, R16-07: the follower subscribes with afterSequence
    = its durable cursor; after the socket drops it reconnects from that cursor; every event
    reaches the handler once, in order, chain verified, and the last cursor is ACKed."""
    group = live_world.group
    handled: list[int] = []
    with _client(live_asgi_server, live_world) as client:
        store = CursorStore(tmp_path / "c.sqlite")
        follower: StreamFollower

        def handle(event: dict[str, Any]) -> None:
            handled.append(event["sequence"])
            if event["sequence"] == 5 and follower.connections == 1:
                follower.disconnect()  # as a network failure would, mid-stream

        feed = EventFeed(client, store, group, handle)
        follower = StreamFollower(client, live_asgi_server.ws_url, [feed])
        target = 3 + 6  # three membership grants, then six missions
        errors: list[BaseException] = []

        def follow() -> None:
            try:
                follower.run(lambda: feed.cursor >= target, timeout_s=30)
            except BaseException as error:
                errors.append(error)

        thread = threading.Thread(target=follow)
        thread.start()
        # two missions (events 4 and 5), and the rest only once the socket dropped at 5: a
        # fast server could otherwise have all six in the log before the first SUBSCRIBE,
        # delivered in the replay before the drop takes effect, with no reconnect to test
        _missions(client, group, 2)
        deadline = time.monotonic() + 20
        while 5 not in handled and time.monotonic() < deadline:
            time.sleep(0.05)
        _missions(client, group, 4, start=3)
        thread.join(timeout=40)
        assert not thread.is_alive()
        assert errors == []
        assert handled == list(range(1, target + 1))
        assert follower.connections >= 2
        assert _acked("agent:w1", group, target) == target


def test_the_stream_refuses_a_tampered_event(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """wire.md §6: an EVENT frame that does not chain is refused with its sequence; the
    cursor stays before it (R16-05)."""
    with _client(live_asgi_server, live_world) as client:
        _missions(client, live_world.group, 1)
        events = _events(client, live_world.group)
        feed = EventFeed(
            client, CursorStore(tmp_path / "c.sqlite"), live_world.group, lambda _e: None
        )
        follower = StreamFollower(client, live_asgi_server.ws_url, [feed])
        tampered = {**events[1], "recorded_at": events[1]["recorded_at"].replace("Z", "1Z")}

        class Frames:
            def send(self, _text: str) -> None:
                pass

        follower.handle_frame(Frames(), {"op": "EVENT", "event": events[0]})  # type: ignore[arg-type]
        with pytest.raises(ChainBroken) as broken:
            follower.handle_frame(Frames(), {"op": "EVENT", "event": tampered})  # type: ignore[arg-type]
        assert broken.value.sequence == 2
        assert feed.cursor == 1
