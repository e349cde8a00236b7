"""Pages read ahead for REST readers catching up (``apps/api/next_pages.py``, issue 15).

First what is kept, for how long, how many reads run at once, and which page a request may
be answered with, with the reads as futures completed by hand. Then the edge over real
reads: a reader paging to the head gets what a fresh read gives, and whatever happened
between the read ahead and the request (events appended, a membership revoked, a session
replaced, events archived) is answered as a fresh read answers it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from django.core.asgi import get_asgi_application
from django.db import OperationalError
from prometheus_client import REGISTRY

from apps.api.edge import CommandEdge
from apps.api.next_pages import NextPages, PageKey, served_ahead
from apps.ledger import snapshots
from apps.ledger.archive import archive
from apps.ledger.selectors import EventPage, events_page
from apps.ledger.write_path import submit_command
from apps.registry import services
from tests.factories import World, mission_body

from .asgi_calls import Headers, asgi_call
from .http import head_sequence


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def key(after: int, token: str = "mwps_reader", limit: int = 3) -> PageKey:
    return PageKey(token, "g-research", after, limit)


def pending() -> Future[EventPage]:
    return Future()


def done(page: EventPage) -> Future[EventPage]:
    future: Future[EventPage] = Future()
    future.set_result(page)
    return future


def failed(error: Exception) -> Future[EventPage]:
    future: Future[EventPage] = Future()
    future.set_exception(error)
    return future


def page(after: int, count: int, head: int) -> EventPage:
    documents = [f'{{"sequence":{after + i}}}' for i in range(1, count + 1)]
    return EventPage(documents, head, after + count)


def counted(outcome: str) -> float:
    value = REGISTRY.get_sample_value("mwp_event_pages_read_ahead_total", {"outcome": outcome})
    return value or 0.0


def test_a_page_read_ahead_is_taken_once_by_the_request_it_was_read_for() -> None:
    pages = NextPages()
    future = pending()

    assert pages.offer(key(3), lambda: future) is True

    assert pages.take(key(3, token="mwps_someone_else")) is None
    assert pages.take(key(3, limit=4)) is None
    assert pages.take(key(4)) is None
    assert pages.take(key(3)) is future
    assert pages.take(key(3)) is None


def test_the_same_request_is_not_read_ahead_twice() -> None:
    pages = NextPages()
    reads: list[Future[EventPage]] = []

    def read() -> Future[EventPage]:
        reads.append(pending())
        return reads[-1]

    assert pages.offer(key(3), read) is True
    assert pages.offer(key(3), read) is False
    assert len(reads) == 1


def test_a_page_not_asked_for_in_time_is_dropped() -> None:
    clock = Clock()
    pages = NextPages(ttl_s=10.0, clock=clock)
    pages.offer(key(3), lambda: done(page(3, 3, 9)))
    pages.offer(key(6), lambda: done(page(6, 3, 9)))

    clock.now += 10.5
    assert pages.take(key(3)) is None  # expired: the request reads afresh

    pages.offer(key(9), lambda: done(page(9, 3, 20)))  # drops the other expired page
    assert len(pages) == 1


def test_no_more_reads_run_at_once_than_in_flight_allows() -> None:
    pages = NextPages(in_flight=2)
    first, second = pending(), pending()
    pages.offer(key(3, token="a"), lambda: first)
    pages.offer(key(3, token="b"), lambda: second)

    assert pages.offer(key(3, token="c"), pending) is False

    first.set_result(page(3, 3, 9))  # done: kept, but no longer running
    assert pages.offer(key(3, token="c"), pending) is True


def test_no_read_starts_while_the_pages_kept_hold_max_bytes() -> None:
    """A page of large events is bounded by what one request reads; the pages kept, by this."""
    pages = NextPages(max_bytes=40, in_flight=5)
    big = page(3, 3, 20)
    assert sum(map(len, big.documents)) == 42  # three documents of 14 bytes
    pages.offer(key(3, token="a"), lambda: done(big))

    assert pages.offer(key(3, token="b"), pending) is False
    assert pages.take(key(3, token="a")) is not None
    assert pages.offer(key(3, token="b"), pending) is True


def test_a_failed_or_unfinished_read_holds_no_bytes() -> None:
    pages = NextPages(max_bytes=1, in_flight=5)
    pages.offer(key(3, token="a"), lambda: failed(RuntimeError("connection lost")))
    pages.offer(key(3, token="b"), pending)

    assert pages.offer(key(3, token="c"), pending) is True


def test_beyond_capacity_the_oldest_page_is_dropped() -> None:
    pages = NextPages(capacity=2, in_flight=5)
    for token in ("a", "b", "c"):
        pages.offer(key(3, token=token), lambda: done(page(3, 3, 9)))

    assert len(pages) == 2
    assert pages.take(key(3, token="a")) is None
    assert pages.take(key(3, token="c")) is not None


def test_a_full_page_is_served_under_the_head_the_request_read() -> None:
    """The events after+1 … after+limit never change (R16-05): the page read ahead is served
    with the head read by the request's own checks, which only grows."""
    before = counted("served")

    answer = served_ahead(done(page(3, 3, 9)), probe=page(3, 1, 12), key=key(3))

    assert answer == EventPage(page(3, 3, 9).documents, 12, 6)
    assert counted("served") == before + 1


def test_a_page_that_is_not_full_or_whose_read_failed_is_read_afresh() -> None:
    """A page cut short by the head it was read under may have more events now; a failed
    read (an outage, or the events archived meanwhile) proves nothing."""
    before = counted("read_afresh")
    short = done(page(3, 2, 5))
    lost = failed(RuntimeError("connection lost"))

    assert served_ahead(short, probe=page(3, 1, 9), key=key(3)) is None
    assert served_ahead(lost, probe=page(3, 1, 9), key=key(3)) is None
    assert counted("read_afresh") == before + 2


def test_a_page_past_the_head_the_request_read_is_never_served() -> None:
    """Defensive: a head cannot go back, but a page past the head reported is never sent."""
    assert served_ahead(done(page(3, 3, 9)), probe=page(3, 1, 5), key=key(3)) is None


# --- through the edge, over real reads ----------------------------------------------------


@pytest.fixture
def edge(transactional_db: None) -> Iterator[CommandEdge]:
    """An edge of its own (no page read ahead by another test), its reads finished before
    the test's tables are emptied."""
    door = CommandEdge(get_asgi_application())
    yield door
    door._pool.shutdown(wait=True)


def append(world: World, count: int) -> int:
    """``count`` more events in the group through the write path; the head."""
    for _ in range(count):
        envelope = world.w1.command(world.group, "mission.create", mission_body())
        outcome = submit_command(group_id=world.group, document=envelope, caller=world.w1.caller)
        assert outcome.status == 201, outcome.body
    return head_sequence(world.group)


def read(door: Any, world: World, token: str, after: int, limit: int) -> tuple[int, Any]:
    """``GET …/events?after=&limit=`` through ``door``: (status, the decoded body)."""
    headers: Headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())]
    status, _, body = asyncio.run(
        asgi_call(
            door,
            f"/api/v1/groups/{world.group}/events",
            headers,
            b"",
            method="GET",
            query=f"after={after}&limit={limit}".encode(),
        )
    )
    return status, json.loads(body)


def reads_ahead_settled(door: CommandEdge) -> int:
    """Wait for the reads ahead to finish, so a test sees them done instead of racing them;
    how many pages are kept."""
    deadline = time.monotonic() + 30
    while door._next_pages.running():
        assert time.monotonic() < deadline, "a read ahead did not finish"
        time.sleep(0.01)
    return len(door._next_pages)


@pytest.mark.parametrize("limit", [1, 3, 4])
def test_a_reader_catching_up_gets_every_page_as_a_fresh_read_gives_it(
    edge: CommandEdge, world: World, limit: int
) -> None:
    """wire.md §4, R16-05: page after page to the head, each answer equal to Django's door
    reading the same page afresh."""
    head = append(world, 8)
    served, afresh = counted("served"), counted("read_afresh")
    after = 0
    while after < head:
        status, page = read(edge, world, world.w1.token, after, limit)
        reads_ahead_settled(edge)
        assert (status, page) == read(get_asgi_application(), world, world.w1.token, after, limit)
        after = page["next_after"]
    assert after == head
    # every full page but the first was read ahead; a last page short of the limit was read
    # ahead too, short, and read afresh
    assert counted("served") - served == head // limit - 1
    assert counted("read_afresh") - afresh == (1 if head % limit else 0)


def test_a_page_read_ahead_reports_the_head_of_its_request(edge: CommandEdge, world: World) -> None:
    """Events appended after the page was read ahead: the answer's head is the new one (the
    head the request's own checks read), its events the same."""
    append(world, 6)
    _, first = read(edge, world, world.w1.token, 0, 3)
    assert (first["next_after"], reads_ahead_settled(edge)) == (3, 1)
    head = append(world, 2)

    status, second = read(edge, world, world.w1.token, 3, 3)

    assert status == 200
    assert second["head"] == head
    assert [event["sequence"] for event in second["events"]] == [4, 5, 6]


def test_a_page_cut_short_by_its_head_is_read_afresh(edge: CommandEdge, world: World) -> None:
    """Read ahead while the head was within the page, the page was short; by the request more
    events exist, and the answer is the full page a fresh read gives."""
    head = append(world, 2)
    limit = head - 2  # the first page ends two events before the head
    read(edge, world, world.w1.token, 0, limit)
    assert reads_ahead_settled(edge) == 1
    afresh = counted("read_afresh")
    head = append(world, limit)

    status, page = read(edge, world, world.w1.token, limit, limit)

    assert status == 200
    assert [event["sequence"] for event in page["events"]] == list(range(limit + 1, 2 * limit + 1))
    assert page["head"] == head
    assert counted("read_afresh") == afresh + 1


def test_a_member_revoked_after_the_read_ahead_gets_nothing_of_it(
    edge: CommandEdge, world: World
) -> None:
    """wire.md §2, R11.5-01: the membership is checked when the request comes, not when the
    page was read ahead."""
    append(world, 6)
    read(edge, world, world.w2.token, 0, 3)
    assert reads_ahead_settled(edge) == 1
    services.membership_revoke(
        group_id=world.group, admin=world.alice.caller, principal=world.w2.principal
    )

    status, refusal = read(edge, world, world.w2.token, 3, 3)

    assert (status, refusal["error"]["code"]) == (403, "NOT_A_MEMBER")


def test_a_replaced_session_gets_nothing_of_the_read_ahead(edge: CommandEdge, world: World) -> None:
    """R11.3-10: once a newer session exists, the old token is ``STALE_SESSION``."""
    append(world, 6)
    old = world.w1.token
    read(edge, world, old, 0, 3)
    assert reads_ahead_settled(edge) == 1
    world.w1.open_session()

    status, refusal = read(edge, world, old, 3, 3)

    assert (status, refusal["error"]["code"]) == (401, "STALE_SESSION")


def test_events_archived_after_the_read_ahead_are_cursor_too_old(
    edge: CommandEdge, world: World
) -> None:
    """wire.md §4, R16-10: the first event asked for left the online log after the page was
    read ahead; the request gets ``CURSOR_TOO_OLD``, as a fresh read would."""
    append(world, 8)
    read(edge, world, world.w1.token, 0, 3)
    assert reads_ahead_settled(edge) == 1
    snapshots.take_as_admin(world.group, world.alice.caller)
    archive(world.group, 5)

    status, refusal = read(edge, world, world.w1.token, 3, 3)

    assert (status, refusal["error"]["code"]) == (410, "CURSOR_TOO_OLD")


def test_a_read_ahead_that_failed_is_read_afresh(
    edge: CommandEdge, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read ahead that raised (here a lost connection) proves nothing: the request reads
    its page afresh and gets what Django's door gives."""

    def lost(*args: Any, **kwargs: Any) -> EventPage:
        raise OperationalError("connection lost")

    monkeypatch.setattr("apps.api.edge.events_page", lost)
    append(world, 6)
    read(edge, world, world.w1.token, 0, 3)
    assert reads_ahead_settled(edge) == 1
    afresh = counted("read_afresh")

    answer = read(edge, world, world.w1.token, 3, 3)

    assert answer == read(get_asgi_application(), world, world.w1.token, 3, 3)
    assert answer[0] == 200
    assert counted("read_afresh") == afresh + 1


def test_a_request_that_comes_while_its_page_is_read_waits_for_it(
    edge: CommandEdge, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The usual case in a replay: the reader asks before the read ahead has finished; the
    request's checks run beside it, then the page is served once read."""
    started, release = threading.Event(), threading.Event()

    def held(*args: Any, **kwargs: Any) -> EventPage:
        started.set()
        assert release.wait(timeout=30)
        return events_page(*args, **kwargs)

    monkeypatch.setattr("apps.api.edge.events_page", held)
    append(world, 6)
    read(edge, world, world.w1.token, 0, 3)
    assert started.wait(timeout=30)
    assert edge._next_pages.running()  # held: still reading when the next request comes
    served = counted("served")
    threading.Timer(0.2, release.set).start()

    answer = read(edge, world, world.w1.token, 3, 3)

    assert answer == read(get_asgi_application(), world, world.w1.token, 3, 3)
    assert counted("served") == served + 1
