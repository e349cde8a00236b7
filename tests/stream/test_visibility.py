"""Must hold: a writer holding sequence N open while N+1 is submitted, 1,000 times (a sample
of 250 in ``make test``: tests/proofs.py) — no reader, cursor or ACK ever passes N before N is
visible.

Everything is real: two writer threads with their own PostgreSQL connections going through the
one write path, a server process serving the stream and the REST API, sockets and HTTP from
this process. The test does not assume the head-row lock works; each round it watches the
second writer's backend wait on the first one's lock (``pg_blocking_pids``), and it observes
every reader while the first transaction is still open.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from django.db import connection

from apps.ledger.broadcast import announce_head
from apps.ledger.write_path import Outcome
from tests import proofs
from tests.factories import World, build_world, mission_body
from tests.live_server import LiveServer
from tests.stream.visibility_helpers import StreamSocket, Writer, hold_open, submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.proof]

ROUNDS = proofs.size(sample=250, full=1000)
# Every PROBE_EVERY-th round a new socket also subscribes while N is open (1 in 10): its
# replay is a read of the log made during the hold, and it must stop at N-1.
PROBE_EVERY = 10
WAIT_S = 10.0  # generous: only a failure ever waits this long


@dataclass
class Follower:
    """A socket's events, checked as they arrive: in order, no gap, never past ``ceiling``."""

    name: str
    socket: StreamSocket
    last: int = 0
    received: list[int] = field(default_factory=list)
    replies: list[dict[str, Any]] = field(default_factory=list)

    def record(self, frame: dict[str, Any], ceiling: int) -> None:
        if frame.get("op") != "EVENT":
            self.replies.append(frame)
            return
        sequence = frame["event"]["sequence"]
        assert sequence <= ceiling, (
            f"{self.name} received sequence {sequence} while only {ceiling} was committed"
        )
        assert sequence == self.last + 1, f"{self.name} got {sequence} after {self.last}"
        self.last = sequence
        self.received.append(sequence)

    def read_until(self, done: Callable[[], bool], ceiling: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{self.name} waited {WAIT_S} s (last {self.last})"
            try:
                frame = self.socket.receive(remaining)
            except TimeoutError:
                raise AssertionError(f"{self.name} waited {WAIT_S} s (last {self.last})") from None
            self.record(frame, ceiling)

    def drain(self, ceiling: int) -> None:
        for frame in self.socket.pending():
            self.record(frame, ceiling)


@dataclass
class Race:
    world: World
    server: LiveServer
    a: Writer
    b: Writer
    subscriber: Follower  # follows the group once, from the start: must see 1..head exactly
    rest: httpx.Client
    head: int  # the last committed (and so visible) sequence
    answers: list[tuple[Future[Outcome], int]] = field(default_factory=list)

    @property
    def group(self) -> str:
        return self.world.group

    def check_answers(self, *, wait: bool) -> None:
        """Each writer's answer names the one sequence it was expected to get."""
        for future, sequence in [a for a in self.answers if wait or a[0].done()]:
            outcome = future.result(timeout=WAIT_S)
            assert [e["sequence"] for e in outcome.body["events"]] == [sequence], outcome
            self.answers.remove((future, sequence))

    def command(self, n: int, writer: str) -> dict[str, Any]:
        return self.world.w1.command(
            self.group, "mission.create", mission_body(f"vis-{n}-{writer}")
        )


@pytest.fixture
def race(live_asgi_server: LiveServer, transactional_db: None) -> Iterator[Race]:
    world = build_world()
    a, b = Writer("writer-a"), Writer("writer-b")
    subscriber = Follower("subscriber", StreamSocket(live_asgi_server.ws_url, world.w2.token))
    rest = httpx.Client(
        base_url=f"{live_asgi_server.url}/api/v1",
        headers={"Authorization": f"Bearer {world.w2.token}"},
        timeout=WAIT_S,
    )
    head = _committed_head(world.group)
    try:
        yield Race(world, live_asgi_server, a, b, subscriber, rest, head)
    finally:
        rest.close()
        subscriber.socket.close()
        a.close()
        b.close()


def test_no_reader_or_cursor_passes_a_sequence_held_open_while_the_next_is_submitted(
    race: Race,
) -> None:
    """R16-01, R16-03, R16-05, R16-06, R16-07 (MWP-WRK-029/030), wire§6, wire§7: 1,000
    rounds of writer A holding sequence N uncommitted while writer B submits N+1.

    While N is open, B is seen blocked on A's lock (``pg_blocking_pids``) and has committed
    nothing, and every reader stops at N-1: the live subscriber (woken by a premature hint
    claiming N) receives nothing past N-1, every 10th round a new socket subscribing after
    N-2 replays N-1 and nothing more, ``GET …/events?after=N-1`` is empty with head N-1, and
    the subscriber's ACK of N-1 is stored while ACKs of N and N+1 are ``ACK_BEYOND_HEAD``.
    Once A commits, B commits N+1. Over all rounds the subscriber received exactly 1..head,
    each once and in order, and its stored cursor never exceeded the committed head at any
    observation: a gap is never visible, so no cursor can move over one.
    """
    subscriber = race.subscriber
    subscriber.socket.send({"op": "SUBSCRIBE", "group": race.group, "afterSequence": 0})
    subscriber.read_until(lambda: subscriber.last == race.head, race.head)

    for n in range(ROUNDS):
        _round(race, n)

    race.check_answers(wait=True)
    subscriber.read_until(lambda: subscriber.last == race.head, race.head)
    assert not subscriber.replies, subscriber.replies
    assert subscriber.received == list(range(1, race.head + 1))
    assert race.head == _committed_head(race.group)


def _round(race: Race, n: int) -> None:
    """One round: hold N open, observe every reader while B waits, then let both commit."""
    visible = race.head
    appended, release = threading.Event(), threading.Event()
    a_committed, b_committed = threading.Event(), threading.Event()
    held = race.a.submit(
        hold_open,
        group_id=race.group,
        document=race.command(n, "a"),
        caller=race.world.w1.caller,
        appended=appended,
        release=release,
        committed=a_committed,
        timeout_s=WAIT_S,
    )
    following: Future[Outcome] | None = None
    try:
        _happened(appended, held, "A to append N")
        following = race.b.submit(
            submit,
            group_id=race.group,
            document=race.command(n, "b"),
            caller=race.world.w1.caller,
            committed=b_committed,
        )
        _wait_for(
            lambda: _blocked_by(race.b.backend_pid, race.a.backend_pid) or following.done(),
            "B to wait on A's lock",
        )
        assert not following.done(), f"B finished while A held N open: {following.result()!r}"
        _observe_while_held(race, visible, probe=n % PROBE_EVERY == 0)
        assert not b_committed.is_set(), "B committed while A still held N open"
        assert _blocked_by(race.b.backend_pid, race.a.backend_pid)
        # Last, so the whole hold is covered: whatever reached the socket is at most N-1.
        race.subscriber.drain(visible)
        assert race.subscriber.last == visible
    finally:
        release.set()
    _happened(a_committed, held, "A to commit N")
    assert following is not None
    _happened(b_committed, following, "B to commit N+1")
    # Their answers (after the after-commit hints) are checked while the next round runs;
    # N and N+1 reach the subscriber then too, and its next observation waits for them.
    race.answers += [(held, visible + 1), (following, visible + 2)]
    race.head = visible + 2
    race.check_answers(wait=False)


def _observe_while_held(race: Race, visible: int, *, probe: bool) -> None:
    """Every reader, while A holds ``visible + 1`` open and B waits to append ``visible + 2``.

    The subscriber may still be receiving the previous round's events (committed, so allowed):
    the waits below also wait for those, and every frame is checked as it arrives.
    """
    group, subscriber = race.group, race.subscriber
    # A hint claiming N before N is committed: it makes the subscriber's consumer read the
    # log now, and that read must stop at the committed head, whatever the hint says.
    announce_head(group, visible + 1)
    for beyond in (visible + 1, visible + 2):
        subscriber.socket.send({"op": "ACK", "cursors": {group: beyond}})
    if probe:
        _probe(race, visible)
    # The subscriber acknowledges what it has received, as a client does: all of N-1.
    subscriber.read_until(lambda: subscriber.last == visible, visible)
    subscriber.socket.send({"op": "ACK", "cursors": {group: subscriber.last}})

    page = race.rest.get(f"/groups/{group}/events", params={"after": visible})
    assert page.status_code == 200, page.text
    assert page.json() == {"events": [], "head": visible, "next_after": visible}

    subscriber.read_until(lambda: len(subscriber.replies) == 3, visible)
    *refused, stored = subscriber.replies
    assert [(r["op"], r["code"], r["group"]) for r in refused] == [
        ("ERROR", "ACK_BEYOND_HEAD", group)
    ] * 2, refused
    assert stored == {"op": "ACKED", "cursors": {group: visible}}, stored
    subscriber.replies.clear()

    assert _committed_head(group) == visible
    assert _events_after(group, visible) == 0


def _probe(race: Race, visible: int) -> None:
    """A new socket subscribing after N-2 while N is open: it replays N-1 and nothing more."""
    probe = Follower("probe", StreamSocket(race.server.ws_url, race.world.w1.token), visible - 1)
    try:
        probe.socket.send({"op": "SUBSCRIBE", "group": race.group, "afterSequence": visible - 1})
        probe.read_until(lambda: probe.last == visible, visible)
        probe.drain(visible)
        assert (probe.received, probe.replies) == ([visible], [])
    finally:
        probe.socket.close()


def _blocked_by(waiting_pid: int, holding_pid: int) -> bool:
    """Whether backend ``waiting_pid`` waits on a lock that ``holding_pid`` holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT wait_event_type = 'Lock' AND %s = ANY(pg_blocking_pids(pid)) "
            "FROM pg_stat_activity WHERE pid = %s",
            [holding_pid, waiting_pid],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def _committed_head(group: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT head_sequence FROM ledger_grouplog WHERE group_id = %s", [group])
        return int(cursor.fetchone()[0])


def _events_after(group: str, sequence: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM ledger_event WHERE group_id = %s AND sequence > %s",
            [group, sequence],
        )
        return int(cursor.fetchone()[0])


def _happened(event: threading.Event, writer: Future[Outcome], what: str) -> None:
    """Wait for ``event``, which ``writer`` sets; fail at once if the writer ends without it."""
    deadline = time.monotonic() + WAIT_S
    while not event.wait(0.05):
        assert not writer.done(), f"{what}: the writer ended with {writer.exception()!r}"
        assert time.monotonic() < deadline, f"waited {WAIT_S} s for {what}"


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT_S} s for {what}"
        time.sleep(0.001)
