"""The agent client behind the online log, and against tampering in transit.

``CURSOR_TOO_OLD`` (REST 410 or a stream ``ERROR``) makes the client restore the signed
snapshot it names, verify it, and follow on from its sequence (wire.md §7; R16-10, R16-11);
snapshot + tail equals a full replay of the whole history (R16-08). One flipped bit in a
snapshot or in an event is refused, naming the first sequence that does not verify
(MWP-WRK-029). Against a real server and PostgreSQL; the tampering is done by a transport that
wraps the real HTTP one, or on frames read off a real socket, so the server is never faked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import connect

from apps.ledger.archive import archive
from apps.ledger.models import GroupLog
from apps.ledger.replay import replay
from apps.ledger.snapshots import take_as_authority
from missionweave.client import (
    AgentClient,
    ChainBroken,
    CursorStore,
    EventFeed,
    SnapshotRejected,
    StreamFollower,
)
from missionweave.protocol import decider, snapshots
from missionweave.protocol.facts import Fact
from tests.factories import World, build_world, mission_body
from tests.live_server import LiveServer

EVENT_PREFIX = '{"op":"EVENT","event":'


@pytest.fixture
def live_world(transactional_db: None) -> World:
    return build_world()


def _client(server: LiveServer, world: World, **kwargs: Any) -> AgentClient:
    return AgentClient(server.url, "w1", world.w1.key, sleep=lambda _s: None, **kwargs)


def _missions(client: AgentClient, group: str, count: int) -> None:
    for _ in range(count):
        client.submit(group, "mission.create", mission_body())


def _archive_through_head(group: str) -> int:
    """Snapshot at the head S (``snapshot.created`` lands at S + 1), archive through S."""
    sequence = take_as_authority(group).snapshot.sequence
    assert archive(group, sequence) == sequence
    return sequence


def _head(group: str) -> int:
    return GroupLog.objects.get(group_id=group).head_sequence


class Recorder:
    """A feed's handlers: the events and the snapshots it was given, in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, Any]] = []

    def feed(self, client: AgentClient, store: CursorStore, group: str) -> EventFeed:
        return EventFeed(
            client, store, group, self.events.append, on_snapshot=self.snapshots.append
        )

    @property
    def sequences(self) -> list[int]:
        return [event["sequence"] for event in self.events]


def test_catch_up_restores_the_snapshot_and_snapshot_plus_tail_is_a_full_replay(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """R16-10, R16-11, R16-08: a reader at 0 of an archived group is told CURSOR_TOO_OLD,
    restores the verified snapshot at S, reads S+1.. from the online log; the restored state
    with the tail folded in equals the replay of the whole history (archive + online), and the
    chain it verified ends on the authority-signed head."""
    group = live_world.group
    recorder = Recorder()
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 4)
        snapshot_at = _archive_through_head(group)
        _missions(client, group, 3)
        feed = recorder.feed(client, CursorStore(tmp_path / "c.sqlite"), group)
        feed.catch_up(limit=2)
        head = _head(group)
        assert feed.restored == [snapshot_at]
        assert [s["sequence"] for s in recorder.snapshots] == [snapshot_at]
        assert recorder.sequences == list(range(snapshot_at + 1, head + 1))
        assert feed.verify_head()["sequence"] == head == feed.cursor

    state = snapshots.restore(recorder.snapshots[0]["projections"])
    for event in recorder.events:
        decider.apply(state, Fact.of_event(event))
    full = replay(group, through=head)
    assert full.chain_break is None
    assert snapshots.projections_of(state) == snapshots.projections_of(full.state)


def test_the_stream_restores_the_snapshot_and_follows_on(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """wire.md §7, R16-10: SUBSCRIBE below the online floor → ERROR CURSOR_TOO_OLD with the
    snapshot; the follower restores it and subscribes again after its sequence, then gets the
    tail and live events, each once and in order."""
    group = live_world.group
    recorder = Recorder()
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 3)
        snapshot_at = _archive_through_head(group)
        _missions(client, group, 2)
        feed = recorder.feed(client, CursorStore(tmp_path / "c.sqlite"), group)
        follower = StreamFollower(client, live_asgi_server.ws_url, [feed])
        head = _head(group)
        follower.run(until=lambda: feed.cursor >= head, timeout_s=20)
        assert follower.connections == 1  # restored and resubscribed on the same socket
        _missions(client, group, 1)
        follower.run(until=lambda: feed.cursor >= head + 1, timeout_s=20)
        assert feed.restored == [snapshot_at]
        assert recorder.sequences == list(range(snapshot_at + 1, head + 2))


class FlipSnapshotBit(httpx.BaseTransport):
    """The real transport; the body of a snapshot GET has bit ``bit`` of byte ``at`` flipped."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.flip: tuple[int, int] | None = None
        self.served: bytes = b""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        body = response.read()
        if "/snapshots/" not in request.url.path or self.flip is None:
            return response
        self.served = body
        at, bit = self.flip
        at %= len(body)
        tampered = body[:at] + bytes([body[at] ^ (1 << bit)]) + body[at + 1 :]
        return httpx.Response(response.status_code, headers=response.headers, content=tampered)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def archived(live_asgi_server: LiveServer, live_world: World) -> tuple[World, int]:
    with _client(live_asgi_server, live_world) as client:
        _missions(client, live_world.group, 3)
    return live_world, _archive_through_head(live_world.group)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(at=st.integers(min_value=0, max_value=1 << 20), bit=st.integers(min_value=0, max_value=7))
def test_a_snapshot_with_one_flipped_bit_is_refused(
    live_asgi_server: LiveServer,
    archived: tuple[World, int],
    tmp_path_factory: pytest.TempPathFactory,
    at: int,
    bit: int,
) -> None:
    """R16-11, MWP-WRK-029: whatever bit of the served snapshot is flipped — in the JSON
    structure, a projection, the event hash, the digest's input or the signature — the client
    refuses it as ``SnapshotRejected`` naming the snapshot's sequence; nothing is restored,
    handed over, or processed past it."""
    world, snapshot_at = archived
    transport = FlipSnapshotBit()
    transport.flip = (at, bit)
    recorder = Recorder()
    store = CursorStore(tmp_path_factory.mktemp("flip") / "c.sqlite")
    with _client(live_asgi_server, world, transport=transport) as client:
        feed = recorder.feed(client, store, world.group)
        with pytest.raises(SnapshotRejected) as rejected:
            feed.catch_up()
    assert transport.served  # the flip was applied to a snapshot the server did serve
    assert rejected.value.sequence == snapshot_at
    assert rejected.value.group == world.group
    assert (feed.cursor, feed.restored, recorder.snapshots, recorder.events) == (0, [], [], [])


class SentFrames:
    """Stands in for the socket a follower answers on (ACK is off; nothing is sent)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, text: str) -> None:
        self.sent.append(text)


@pytest.fixture
def event_frames(live_asgi_server: LiveServer, live_world: World) -> list[bytes]:
    """The EVENT frames of a group as the real server sent them on a real socket."""
    with _client(live_asgi_server, live_world) as client:
        _missions(client, live_world.group, 5)
        head = _head(live_world.group)
        token = client.open_session().token
    url = live_asgi_server.ws_url + "/ws/v1/stream"
    with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as socket:
        socket.send(json.dumps({"op": "SUBSCRIBE", "group": live_world.group, "afterSequence": 0}))
        frames = [socket.recv(timeout=10) for _ in range(head)]
    return [frame.encode() if isinstance(frame, str) else frame for frame in frames]


def _flip(frame: bytes, at: int, bit: int) -> bytes:
    """One bit flipped inside the event document of an EVENT frame (not in the envelope)."""
    assert frame.startswith(EVENT_PREFIX.encode())
    assert frame.endswith(b"}")
    start, end = len(EVENT_PREFIX), len(frame) - 1
    position = start + at % (end - start)
    return frame[:position] + bytes([frame[position] ^ (1 << bit)]) + frame[position + 1 :]


def _same_value(tampered: bytes, original: bytes) -> bool:
    try:
        return json.loads(tampered) == json.loads(original)
    except ValueError:
        return False


@pytest.fixture
def frames_client(live_asgi_server: LiveServer, live_world: World) -> Iterator[AgentClient]:
    """One client for every example (its session is opened once)."""
    with _client(live_asgi_server, live_world) as client:
        client.open_session()
        yield client


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    index=st.integers(min_value=0, max_value=4),
    at=st.integers(min_value=0, max_value=1 << 20),
    bit=st.integers(min_value=0, max_value=7),
)
def test_an_event_frame_with_one_flipped_bit_is_refused_naming_its_sequence(
    live_asgi_server: LiveServer,
    live_world: World,
    event_frames: list[bytes],
    frames_client: AgentClient,
    tmp_path_factory: pytest.TempPathFactory,
    index: int,
    at: int,
    bit: int,
) -> None:
    """MWP-WRK-029, R16-03, R16-05: the stream's frames, in order, with one bit flipped inside
    event number ``index + 1``: the events before it are processed and it is refused as
    ``ChainBroken`` naming exactly its sequence. Whatever the follower is given after that,
    the handler only ever sees the authority's true events, contiguous from 1: the frames
    after the refused one wait at the gap, which is filled from the log (R16-05). (A flip
    that leaves the same JSON value, such as the case of a ``\\u`` escape's hex digit,
    changes no event and is processed as sent.)"""
    originals = [json.loads(frame)["event"] for frame in event_frames]
    recorder = Recorder()
    store = CursorStore(tmp_path_factory.mktemp("frames") / "c.sqlite")
    feed = recorder.feed(frames_client, store, live_world.group)
    follower = StreamFollower(frames_client, live_asgi_server.ws_url, [feed], ack=False)
    socket = SentFrames()
    tampered = _flip(event_frames[index], at, bit)
    for frame in event_frames[:index]:
        follower.handle_text(socket, frame)  # type: ignore[arg-type]
    if _same_value(tampered, event_frames[index]):
        follower.handle_text(socket, tampered)  # type: ignore[arg-type]
    else:
        with pytest.raises(ChainBroken) as broken:
            follower.handle_text(socket, tampered)  # type: ignore[arg-type]
        assert broken.value.sequence == index + 1
        assert broken.value.group == live_world.group
        assert recorder.sequences == list(range(1, index + 1))
        assert feed.cursor == index
    for frame in event_frames[index + 1 :]:
        follower.handle_text(socket, frame)  # type: ignore[arg-type]
    assert recorder.events == originals[: len(recorder.events)]
    assert feed.cursor == len(originals)


def test_an_unreadable_frame_on_a_socket_of_several_groups_is_refused(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """MWP-WRK-029: a frame that cannot be attributed to one of several subscribed groups is
    refused, not skipped; it names no group and the lowest position not yet verified."""
    with _client(live_asgi_server, live_world) as client:
        store = CursorStore(tmp_path / "c.sqlite")
        feeds = [EventFeed(client, store, g, lambda _e: None) for g in (live_world.group, "g-b")]
        follower = StreamFollower(client, live_asgi_server.ws_url, feeds, ack=False)
        with pytest.raises(ChainBroken) as broken:
            follower.handle_text(SentFrames(), b'{"op":"EVENT","event":{')  # type: ignore[arg-type]
    assert (broken.value.group, broken.value.sequence) == (None, 1)
