"""Delivery under load, against a real server with the Redis channel layer (must hold).

50 subscribers follow 4 groups on ``/ws/v1/stream`` with the agent client, while 8 writers
append 10,000 events (a sample of 2,000 in ``make test``: tests/proofs.py) through the one
write path and a chaos thread drops subscribers' sockets at random. Every client must end
holding every event of its groups exactly once, in order, with the hash chain intact
(R16-01..R16-06, R16-09, MWP-WRK-029/030). Two properties are checked at two levels:

* the stream itself (the server): on every connection, for every group, the EVENT frames are
  exactly ``afterSequence + 1, + 2, …`` — no gap, no reordering, no duplicate — so the
  live-first-then-log hand-over is race-free; and no client ever had to fill a gap from
  ``GET /events``;
* the client: its handler saw the group's history, byte for byte, once.

The second case runs the same against a server whose channel layer is the list-based Redis
layer with capacity 5: most hints are dropped, and nothing is lost, because hints only wake a
read of the log and the consumer's poll catches what a dropped hint did not announce.

A member revoked mid-run receives nothing after its revocation, and an agent that was never a
member receives nothing at all (wire.md §7).
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from websockets.sync.client import ClientConnection

from apps.ledger.history import history
from apps.ledger.models import GroupLog
from apps.registry import services
from missionweave.client import AgentClient, CursorStore, EventFeed, StreamError, StreamFollower
from missionweave.protocol.events import first_chain_break
from missionweave.protocol.signing import b64url_encode, private_key_seed
from tests import factories, proofs
from tests.factories import AgentPersona, HumanPersona
from tests.live_server import LiveServer, run_live_server

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(900),
    pytest.mark.proof,
]

GROUPS = 4
WRITERS = 8
SUBSCRIBERS = 50
#: memberships granted in groups[0] just after the revocation, so events follow it
LATE_GRANTS = 3
EVENTS = proofs.size(sample=2_000, full=10_000)  # a multiple of WRITERS
#: the pause between two dropped sockets: 10–60 ms at 10,000 events, shorter in proportion in
#: a sample, so that every size drops about as many sockets per event written
DROP_PAUSE_S = (0.01 * EVENTS / 10_000, 0.06 * EVENTS / 10_000)
#: the cursor files live in memory: what is measured here is delivery, not fsync
CAPACITY_FIVE = {"MWP_CHANNEL_LAYER": "core", "MWP_CHANNEL_CAPACITY": "5"}
STORE_DIR = Path("/dev/shm") if Path("/dev/shm").is_dir() else None


@dataclass
class Cast:
    groups: list[str]
    alice: HumanPersona
    writers: list[AgentPersona]
    subscribers: list[tuple[AgentPersona, list[str]]]
    revoked: AgentPersona  # a member of groups[0], revoked while events flow
    outsider: AgentPersona  # never a member of groups[1]
    late: list[AgentPersona]  # granted into groups[0] right after the revocation


def _cast() -> Cast:
    org = factories.organization(factories.unique("org"))
    groups = [factories.group(factories.unique("g-load"), org) for _ in range(GROUPS)]
    alice = factories.human(factories.unique("alice"), staff=True)
    writers = []
    for index in range(WRITERS):
        writer = factories.agent(factories.unique("writer"), org)
        factories.grant(alice, groups[index % GROUPS], writer, "coordinator")
        writer.open_session()
        writers.append(writer)
    subscribers = []
    for index in range(SUBSCRIBERS):
        follows = [groups[index % GROUPS]]
        if index % 10 == 0:  # several groups on one socket
            follows.append(groups[(index + 1) % GROUPS])
        subscriber = factories.agent(factories.unique("reader"), org)
        for group_id in follows:
            factories.grant(alice, group_id, subscriber, "worker")
        subscribers.append((subscriber, follows))
    revoked = factories.agent(factories.unique("revoked"), org)
    factories.grant(alice, groups[0], revoked, "worker")
    outsider = factories.agent(factories.unique("outsider"), org)
    factories.grant(alice, groups[0], outsider, "worker")
    late = [factories.agent(factories.unique("late"), org) for _ in range(LATE_GRANTS)]
    return Cast(groups, alice, writers, subscribers, revoked, outsider, late)


class CountingFeed(EventFeed):
    """An ``EventFeed`` that counts gap repairs from ``GET /events`` (there must be none)."""

    catch_ups = 0

    def catch_up(self, *, limit: int = 100, through: int | None = None) -> int:
        self.catch_ups += 1
        return super().catch_up(limit=limit, through=through)


class RecordingFollower(StreamFollower):
    """A ``StreamFollower`` that records, per connection, where each group was subscribed
    from and the sequence of every EVENT frame, before the feed dedups anything."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subscribed: dict[tuple[int, str], int] = {}
        self.frames: dict[tuple[int, str], list[int]] = defaultdict(list)

    def _subscribe(self, socket: ClientConnection, feed: EventFeed) -> None:
        key = (self.connections, feed.group)
        assert key not in self.subscribed  # no CURSOR_TOO_OLD resubscribe in this test
        self.subscribed[key] = feed.cursor
        super()._subscribe(socket, feed)

    def handle_frame(self, socket: ClientConnection, frame: dict[str, Any]) -> None:
        if frame.get("op") == "EVENT":
            event = frame["event"]
            self.frames[(self.connections, event["group"])].append(event["sequence"])
        super().handle_frame(socket, frame)


@dataclass
class Reader:
    """One subscriber: its client, feeds, follower and what its handler received."""

    persona: AgentPersona
    client: AgentClient
    follower: RecordingFollower
    feeds: list[CountingFeed]
    received: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    errors: list[BaseException] = field(default_factory=list)


def _reader(
    server: LiveServer, persona: AgentPersona, groups: list[str], directory: Path
) -> Reader:
    client = AgentClient(server.url, persona.id, persona.key, sleep=time.sleep)
    store = CursorStore(directory / f"{persona.id}.sqlite")
    received: dict[str, list[dict[str, Any]]] = defaultdict(list)
    feeds = [
        CountingFeed(client, store, group_id, received[group_id].append) for group_id in groups
    ]
    follower = RecordingFollower(
        client, server.ws_url, feeds, reconnect_delay_s=0.05, max_reconnects=50
    )
    return Reader(persona, client, follower, feeds, received)


def _start_writers(
    cast: Cast, environment: dict[str, str], errors: IO[str], batch: int
) -> subprocess.Popen[str]:
    """``tests/stream/load_writer.py`` in a process of its own: 8 writers, EVENTS in all."""
    spec = {
        "batch": batch,
        "writers": [
            {
                "agent": writer.id,
                "seed": b64url_encode(private_key_seed(writer.key)),
                "group": cast.groups[index % GROUPS],
                "session_epoch": writer.session_epoch,
                "membership_epoch": writer.membership_epochs[cast.groups[index % GROUPS]],
                "count": EVENTS // WRITERS,
            }
            for index, writer in enumerate(cast.writers)
        ],
    }
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "missionweave.settings",
        "MWP_TEST_DB_NAME": connection.settings_dict["NAME"],
        **environment,
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.stream.load_writer"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(spec))
    process.stdin.close()
    return process


def _heads(groups: list[str]) -> dict[str, int]:
    return dict(
        GroupLog.objects.filter(group_id__in=groups).values_list("group_id", "head_sequence")
    )


def _run_in_threads(targets: list[Callable[[], None]]) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, daemon=True) for target in targets]
    for thread in threads:
        thread.start()
    return threads


def _deliver_under_load(
    server: LiveServer, tmp_path: Path, environment: dict[str, str], *, batch: int = 25
) -> dict[str, Any]:
    """Run the scenario against ``server``; the writers' process gets ``environment`` (its
    channel layer must be the server's). Returns the writers' report."""
    cast = _cast()
    directory = Path(tempfile.mkdtemp(dir=STORE_DIR)) if STORE_DIR else tmp_path
    readers = [_reader(server, persona, groups, directory) for persona, groups in cast.subscribers]
    revoked = _reader(server, cast.revoked, [cast.groups[0]], directory)
    outsider = _reader(server, cast.outsider, [cast.groups[1]], directory)
    targets: dict[str, int] = {}  # set once every writer is done: the final heads
    writing = threading.Event()
    writing.set()

    def reached(reader: Reader) -> Callable[[], bool]:
        return lambda: (
            bool(targets) and all(feed.cursor >= targets[feed.group] for feed in reader.feeds)
        )

    def follow(reader: Reader, until: Callable[[], bool]) -> Callable[[], None]:
        def run() -> None:
            try:
                reader.follower.run(until, timeout_s=600)
            except BaseException as error:  # recorded and asserted below
                reader.errors.append(error)

        return run

    def reconnects() -> int:
        return sum(reader.follower.connections - 1 for reader in readers)

    def chaos() -> None:
        """Drop a random subscriber's socket every few milliseconds (``DROP_PAUSE_S``) while
        the writers write, and after them until the subscribers have reconnected at least
        once each on average (for at most a minute): on a fast run the writers can finish
        before enough drops landed, and the readers keep following until ``targets`` is set,
        which waits for this thread."""
        chooser = random.Random(1729)
        deadline = math.inf
        while writing.is_set() or (reconnects() < SUBSCRIBERS and time.monotonic() < deadline):
            if not writing.is_set() and deadline == math.inf:
                deadline = time.monotonic() + 60
            time.sleep(chooser.uniform(*DROP_PAUSE_S))
            chooser.choice(readers).follower.disconnect()

    followers = _run_in_threads(
        [follow(reader, reached(reader)) for reader in readers]
        + [follow(revoked, lambda: False), follow(outsider, lambda: False)]
    )
    before = sum(_heads(cast.groups).values())
    errors = (directory / "writers.log").open("w+")
    writers = _start_writers(cast, environment, errors, batch)
    chaos_thread = _run_in_threads([chaos])[0]

    while sum(_heads(cast.groups).values()) - before < EVENTS // 2 and writers.poll() is None:
        time.sleep(0.05)
    revocation = services.membership_revoke(
        group_id=cast.groups[0], admin=cast.alice.caller, principal=cast.revoked.principal
    )
    revoked_at = revocation.body["events"][0]["sequence"]
    # Events after the revocation whatever the writers' pace: on a fast machine they can be
    # done before it, and "nothing after the revocation" would hold with nothing to withhold.
    for persona in cast.late:
        factories.grant(cast.alice, cast.groups[0], persona, "worker")
    writers.wait(timeout=600)
    writing.clear()
    chaos_thread.join()
    errors.seek(0)
    assert writers.returncode == 0, errors.read()
    assert writers.stdout is not None
    report = json.loads(writers.stdout.read())
    assert (report["accepted"], report["refused"]) == (EVENTS, []), report
    targets.update(_heads(cast.groups))
    assert targets[cast.groups[0]] >= revoked_at + LATE_GRANTS  # something to withhold
    for thread in followers[: len(readers)]:
        thread.join(timeout=600)

    logs = {
        group_id: [json.loads(text) for text in history(group_id, through=targets[group_id])]
        for group_id in cast.groups
    }
    for reader in readers:
        assert reader.errors == [], (reader.persona.id, reader.errors)
        for feed in reader.feeds:
            # the client: every event of the group, once, in order, chain intact
            assert reader.received[feed.group] == logs[feed.group], reader.persona.id
            assert first_chain_break(reader.received[feed.group]) is None
            assert feed.catch_ups == 0, "the stream left a gap the client had to read"
        # the server: on each connection, each group's frames follow its SUBSCRIBE exactly
        for key, sequences in reader.follower.frames.items():
            start = reader.follower.subscribed[key]
            assert sequences == list(range(start + 1, start + 1 + len(sequences))), key
    print(f"\n{EVENTS} events, {reconnects()} reconnects of {SUBSCRIBERS} subscribers")
    assert reconnects() >= SUBSCRIBERS, "the chaos thread did not exercise reconnects"

    # wire.md §7: revoked and non-members receive nothing they may not read. The revoked
    # member's follower ends when its NOT_A_MEMBER arrives, which need not be before the
    # readers' last event: on a fast machine the revocation can be the last event of all.
    followers[len(readers)].join(timeout=30)
    revoked.follower.disconnect()
    assert [e["sequence"] for e in revoked.received[cast.groups[0]]][-1:] < [revoked_at]
    assert any(
        isinstance(error, StreamError) and error.code == "NOT_A_MEMBER" for error in revoked.errors
    ), revoked.errors
    assert not any(outsider.received.values())
    assert [getattr(error, "code", None) for error in outsider.errors] == ["NOT_A_MEMBER"]
    for reader in [*readers, revoked, outsider]:
        reader.client.close()
    return report


@pytest.fixture(scope="module")
def capacity_five_server(django_db_setup: None, worker_id: str) -> Iterator[LiveServer]:
    """A server whose channel layer is Redis's list-based layer holding at most 5 messages
    per channel, and this process's layer (the writers' hints) the same."""
    assert settings.REDIS_URL, "the delivery tests run against Redis: set REDIS_URL"
    prefix = f"mwp-cap5-{worker_id}-{uuid.uuid4().hex[:8]}"
    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    layers["default"] = {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [settings.REDIS_URL], "prefix": prefix, "capacity": 5},
    }
    with (
        override_settings(CHANNEL_LAYERS=layers),
        run_live_server(
            database_name=connection.settings_dict["NAME"],
            channel_prefix=prefix,
            extra_env=CAPACITY_FIVE,
        ) as server,
    ):
        yield server


def test_fifty_subscribers_get_every_event_once_in_order_through_disconnects(
    live_asgi_server: LiveServer, tmp_path: Path
) -> None:
    """R16-01, R16-02, R16-04, R16-05, R16-06, R16-09, MWP-WRK-029, MWP-WRK-030: 50
    subscribers, 10,000 events by 8 writers into 4 groups, sockets dropped at random: each
    client holds every event of its groups exactly once, in order, chain intact; each
    connection's frames are gapless from its SUBSCRIBE; revoked and non-members get nothing."""
    assert settings.REDIS_URL, "the delivery tests run against Redis: set REDIS_URL"
    assert "Redis" in settings.CHANNEL_LAYERS["default"]["BACKEND"]
    _deliver_under_load(
        live_asgi_server, tmp_path, {"MWP_CHANNEL_PREFIX": live_asgi_server.channel_prefix}
    )


def test_a_channel_layer_of_capacity_five_loses_nothing(
    capacity_five_server: LiveServer, tmp_path: Path
) -> None:
    """R16-05, R16-09, wire.md §7 (broadcasts are hints): the same load through a channel
    layer that drops every hint beyond 5 queued per subscriber: hints were dropped, and still
    every client holds every event exactly once, in order, with no gap on any connection."""
    environment = {
        "MWP_CHANNEL_PREFIX": capacity_five_server.channel_prefix,
        **CAPACITY_FIVE,
    }
    # one command per commit: a hint per event, so the layer's queues overflow
    report = _deliver_under_load(capacity_five_server, tmp_path, environment, batch=1)
    assert report["dropped_hints"] > 0, "no hint was dropped: the capacity was not exercised"
