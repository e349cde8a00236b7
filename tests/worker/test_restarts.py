"""The worker's queues survive crashes: restarted anywhere, they equal a replay (R11.1-02,
R16-01..06; MWP-WRK-029, MWP-WRK-030).

The must-hold of issue 14: "Restart a worker at random points 100 times during a run: its
queues and cursors always equal what replay gives; no event applied twice; no cursor past a
gap." Events of three groups arrive at least once, duplicated and out of order; the worker
dies at a random SQL statement — its connection closed without a commit, so SQLite discards
the open transaction — and restarts from its file. A second test kills a real worker process
with SIGKILL at random moments.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from itertools import zip_longest
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from missionweave.client.agent import AgentClient
from missionweave.client.errors import ChainBroken
from missionweave.client.feed import EventFeed
from missionweave.protocol import decider, snapshots
from missionweave.protocol.facts import Fact, StateKey
from missionweave.worker.local_store import QueueStore, WrongWorker
from missionweave.worker.queues import GroupQueues, SnapshotInvalid, apply, replay
from tests.protocol.work_scenarios import OTHER_WORKER

from .streams import ME, group_log, logs
from .transport import Transport

ROOT = Path(__file__).resolve().parents[2]
#: the feeds never ask the authority here: the transport below stands for the socket
NO_CLIENT = cast(AgentClient, None)


class Crash(BaseException):
    """The worker process dies here (a BaseException, so nothing on the way catches it)."""


class DyingConnection:
    """The store's SQLite connection, dying before its ``statements_left``-th statement:
    the real connection is closed without a commit — SQLite rolls the open transaction back,
    as after a power cut — and every later call fails, as in a dead process."""

    def __init__(self, real: sqlite3.Connection, statements_left: int) -> None:
        self.real = real
        self.statements_left = statements_left
        self.dead = False

    def _statement(self) -> None:
        if not self.dead and self.statements_left > 0:
            self.statements_left -= 1
            return
        if not self.dead:
            self.dead = True
            self.real.close()
        raise Crash

    def execute(self, *args: Any) -> sqlite3.Cursor:
        self._statement()
        return self.real.execute(*args)

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        self._statement()
        return self.real.executemany(*args)

    def close(self) -> None:
        if not self.dead:
            self.real.close()


class Worker:
    """One run of the worker process: its store and its feeds, counting what it commits."""

    def __init__(self, path: Path, groups: list[str], applied: Counter[str]) -> None:
        def committed(group: str, event: dict[str, Any], changes: Any) -> None:
            applied[event["event_id"]] += 1  # runs after the commit, before any more SQL

        self.store = QueueStore(path, worker=ME, on_applied=committed)
        self.feeds = {group: self.store.feed(NO_CLIENT, group) for group in groups}

    def dies_after(self, statements: int) -> None:
        self.store._db = DyingConnection(self.store._db, statements)  # type: ignore[assignment]

    def run(self, transport: Transport) -> None:
        for group, event in transport:
            self.feeds[group].deliver(event)


def _durable(path: Path, group: str) -> tuple[int, str | None, list[int], int]:
    """What the file holds for ``group``, read by another connection: the cursor, its hash,
    the processed sequences in order and how many distinct event ids."""
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT sequence, hash FROM cursors WHERE group_id = ?", (group,))
        cursor, hash_ = row.fetchone() or (0, None)
        sequences = [
            s
            for (s,) in db.execute(
                "SELECT sequence FROM processed WHERE group_id = ? ORDER BY sequence", (group,)
            )
        ]
        (ids,) = db.execute(
            "SELECT count(DISTINCT event_id) FROM processed WHERE group_id = ?", (group,)
        ).fetchone()
    db.close()
    return cursor, hash_, sequences, ids


class Replays:
    """What a replay gives after each prefix of each group's log, computed once: a cursor only
    moves forward, so each group's replay is carried on from the last cursor checked."""

    def __init__(self, log: dict[str, list[dict]]) -> None:
        self.log = log
        self.states = {group: GroupQueues(group, ME) for group in log}

    def at(self, group: str, cursor: int) -> GroupQueues:
        state = self.states[group]
        if cursor < state.sequence:
            state = GroupQueues(group, ME)
        for event in self.log[group][state.sequence : cursor]:
            state = apply(state, event)
        self.states[group] = state
        return state


def _check_restart(
    path: Path,
    store: QueueStore,
    replays: Replays,
    applied: Counter[str] | None,
) -> None:
    """Everything the must-hold asks of a worker that has just restarted (``applied``: the
    commits counted in this process, when the worker ran in it)."""
    if applied is not None:
        assert max(applied.values(), default=0) <= 1, "an event was applied twice (R16-02)"
    for group, events in replays.log.items():
        cursor, hash_, sequences, ids = _durable(path, group)
        # R16-05, R16-06: the cursor is the highest contiguous sequence applied, never past a
        # gap; every event up to it was applied exactly once
        assert sequences == list(range(1, cursor + 1))
        assert ids == cursor
        assert hash_ == (events[cursor - 1]["hash"] if cursor else None)
        if applied is not None:
            assert {e["event_id"] for e in events[:cursor]} == {
                e["event_id"] for e in events if applied[e["event_id"]]
            }
        # R11.1-02: the queues are what a replay of the same events gives
        assert store.state(group) == replays.at(group, cursor)
        # MWP-WRK-030: the ACK position is that durable cursor
        assert store.cursors().get(group, 0) == cursor


def test_restarting_the_worker_at_100_random_points_keeps_its_queues_equal_to_a_replay(
    tmp_path: Path,
) -> None:
    """R0-14, R0-15, R0-16, R11.1-02, R16-02, R16-04, R16-05, R16-06, MWP-WRK-029,
    MWP-WRK-030 (issue 14 must-hold): events arrive at least once (duplicated, out of order);
    100 deaths at random statements — before a transaction, between the rows and the cursor,
    at the commit, while checking a duplicate — and after each restart the queues and cursors
    equal a replay, no event was applied twice and no cursor passed a gap."""
    rng = random.Random(20261202)
    log = logs(140, steps=320)
    path = tmp_path / "worker.sqlite3"
    replays = Replays(log)
    applied: Counter[str] = Counter()
    transport = Transport(log, rng)
    transport.subscribe({})
    worker = Worker(path, list(log), applied)
    worker.dies_after(rng.randint(0, 40))
    restarts = 0
    while True:
        try:
            worker.run(transport)
            break
        except Crash:
            restarts += 1
        worker = Worker(path, list(log), applied)
        _check_restart(path, worker.store, replays, applied)
        transport.subscribe(worker.store.cursors())  # SUBSCRIBE afterSequence (R16-09)
        if restarts < 100:
            worker.dies_after(rng.randint(0, 40))
    assert restarts == 100
    assert sum(worker.feeds[g].duplicates for g in log) > 0  # duplicates were delivered
    for group, events in log.items():
        assert worker.store.state(group) == replay(events, group=group, worker=ME)
    assert all(applied[e["event_id"]] == 1 for events in log.values() for e in events)
    worker.store.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), deaths=st.lists(st.integers(0, 60), max_size=8))
def test_any_deaths_under_any_delivery_order_end_in_the_replayed_queues(
    tmp_path_factory: pytest.TempPathFactory, seed: int, deaths: list[int]
) -> None:
    """R0-14, R0-15, R11.1-02, MWP-WRK-029: whatever the at-least-once delivery order and
    wherever the worker dies, it ends with every event applied once and the queues a replay
    gives."""
    rng = random.Random(seed)
    log = {group: group_log(group, rng, steps=60) for group in ("g-one", "g-two")}
    path = tmp_path_factory.mktemp("deaths") / "worker.sqlite3"
    replays = Replays(log)
    applied: Counter[str] = Counter()
    transport = Transport(log, rng, duplicate=0.2, hold_back=0.2)
    transport.subscribe({})
    pending = list(deaths)
    while True:
        worker = Worker(path, list(log), applied)
        _check_restart(path, worker.store, replays, applied)
        transport.subscribe(worker.store.cursors())
        if pending:
            worker.dies_after(pending.pop())
        try:
            worker.run(transport)
            break
        except Crash:
            continue
    for group, events in log.items():
        assert worker.store.state(group) == replay(events, group=group, worker=ME)
    assert all(applied[e["event_id"]] == 1 for events in log.values() for e in events)
    worker.store.close()


#: each delivered event costs the child at least this long: 400 events then take over 1.6 s
#: whatever the disk, so the first three kills (each within 0.4 s of "ready") land mid-run
PACE_S = 0.004


def test_a_worker_process_killed_at_random_moments_restarts_where_its_file_says(
    tmp_path: Path,
) -> None:
    """R0-15, R16-05, R16-06, MWP-WRK-029: SIGKILL gives the process no chance to clean up; what
    its file holds after each kill is a cursor with exactly the events up to it applied, and
    the queues a replay of them gives."""
    rng = random.Random(7)
    log = logs(61, groups=("g-alpha", "g-beta"), steps=200)
    logs_file = tmp_path / "logs.json"
    logs_file.write_text(json.dumps(log))
    path = tmp_path / "worker.sqlite3"
    replays = Replays(log)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = 0
    for attempt in range(6):
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.worker.restart_child",
                str(path),
                str(logs_file),
                "3",
                ME,
                str(PACE_S),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        if attempt < 5:
            time.sleep(rng.uniform(0.05, 0.4))
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=120)
        killed += child.returncode == -signal.SIGKILL
        store = QueueStore(path, worker=ME)
        _check_restart(path, store, replays, None)
        store.close()
    assert killed >= 3  # most runs died mid-way (a fast one may finish first)
    assert child.returncode == 0
    store = QueueStore(path, worker=ME)
    for group, events in log.items():
        assert store.state(group) == replay(events, group=group, worker=ME)
    store.close()


# --- the store itself --------------------------------------------------------------------------


def test_the_feed_drops_duplicates_buffers_gaps_and_acknowledges_the_durable_cursor(
    tmp_path: Path,
) -> None:
    """R0-16, R16-02, R16-04, R16-05, R16-07, MWP-WRK-030: a duplicate changes nothing; an
    event after a gap waits in memory and the cursor (the ACK position) stays at the highest
    contiguous durable sequence, before the gap, until it is filled."""
    events = group_log("g-one", random.Random(2), steps=40)
    store = QueueStore(tmp_path / "w.sqlite3", worker=ME)
    feed: EventFeed = store.feed(NO_CLIENT, "g-one")
    assert feed.deliver(events[0]) == 1
    assert feed.deliver(events[0]) == 0
    assert feed.duplicates == 1
    assert feed.deliver(events[2]) == 0
    assert feed.buffered == 1
    assert store.cursors() == {"g-one": 1}
    assert store.state("g-one") == replay(events[:1], group="g-one", worker=ME)
    assert feed.deliver(events[1]) == 2
    assert store.cursors() == {"g-one": 3}
    for event in events[3:]:
        feed.deliver(event)
    assert store.state("g-one") == replay(events, group="g-one", worker=ME)
    store.close()


def test_the_store_applies_only_the_next_event_of_the_group(tmp_path: Path) -> None:
    """R16-03, R16-05: ``advance`` itself refuses an event that does not chain onto the
    cursor, whoever calls it; nothing is written."""
    events = group_log("g-one", random.Random(2), steps=10)
    store = QueueStore(tmp_path / "w.sqlite3", worker=ME)
    store.advance("g-one", events[0])
    with pytest.raises(ChainBroken):
        store.advance("g-one", events[2])
    with pytest.raises(ChainBroken):
        store.advance("g-one", {**events[1], "payload": {"forged": True}})
    assert store.cursors() == {"g-one": 1}
    assert store.state("g-one") == replay(events[:1], group="g-one", worker=ME)
    store.close()


def test_groups_keep_distinct_inboxes_cursors_and_queues(tmp_path: Path) -> None:
    """R0-01, R0-02, R11.1-01 (MWP-WRK-008): the same worker in two groups never mixes them:
    each group has its own inbox, cursor and queue, each equal to a replay of its events."""
    log = logs(5, groups=("g-one", "g-two"), steps=80)
    store = QueueStore(tmp_path / "w.sqlite3", worker=ME)
    for group, events in log.items():
        feed = store.feed(NO_CLIENT, group)
        for event in events:
            feed.deliver(event)
    for group, events in log.items():
        state = store.state(group)
        assert state == replay(events, group=group, worker=ME)
        assert all(row["group"] == group for row in [*state.queue(), *state.active()])
        assert all(entry["event_id"].startswith(f"ev-{group}-") for entry in state.inbox())
        assert store.queue(group) == state.queue()
        assert store.active(group) == state.active()
        assert store.offers(group) == state.offers()
        assert store.inbox(group) == state.inbox()
        assert store.membership(group) == state.membership
    assert store.cursors() == {group: len(events) for group, events in log.items()}
    assert store.queued_everywhere() == [row for g in store.groups() for row in store.queue(g)]
    store.close()


def test_each_group_is_ordered_on_its_own_never_across_groups(tmp_path: Path) -> None:
    """R0-17, R16-03: each group's log is numbered from 1 on its own, and the worker needs no
    order across groups: the same events in three cross-group interleavings (one group
    first, the other first, alternating) end in the same cursors and queues, each group's
    equal to a replay of that group alone."""
    log = logs(11, groups=("g-one", "g-two"), steps=60)
    for events in log.values():
        assert [event["sequence"] for event in events] == list(range(1, len(events) + 1))
    one, two = ([(group, event) for event in log[group]] for group in ("g-one", "g-two"))
    alternating = [pair for pairs in zip_longest(one, two) for pair in pairs if pair]
    outcomes = []
    for n, order in enumerate((one + two, two + one, alternating)):
        store = QueueStore(tmp_path / f"w{n}.sqlite3", worker=ME)
        feeds = {group: store.feed(NO_CLIENT, group) for group in log}
        for group, event in order:
            feeds[group].deliver(event)
        outcomes.append((store.cursors(), {group: store.state(group) for group in log}))
        store.close()
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert outcomes[0][0] == {group: len(events) for group, events in log.items()}
    assert outcomes[0][1] == {
        group: replay(events, group=group, worker=ME) for group, events in log.items()
    }


def test_a_file_holds_one_workers_queues(tmp_path: Path) -> None:
    """R0-01: another worker's file is refused, not merged into."""
    QueueStore(tmp_path / "w.sqlite3", worker=ME).close()
    with pytest.raises(WrongWorker):
        QueueStore(tmp_path / "w.sqlite3", worker=OTHER_WORKER)


def test_a_fresh_file_rebuilds_from_a_local_snapshot_and_the_events_after_it(
    tmp_path: Path,
) -> None:
    """R0-02, R0-15, R11.1-02, MWP-WRK-029: snapshot one worker's group, restore it into a
    new file, feed the rest in order (with duplicates from before the snapshot, dropped by
    event id): the same queues as a full replay."""
    events = group_log("g-one", random.Random(9), steps=120)
    cut = len(events) // 2
    first = QueueStore(tmp_path / "first.sqlite3", worker=ME)
    for event in events[:cut]:
        first.advance("g-one", event)
    document = json.loads(json.dumps(first.snapshot("g-one")))
    first.close()

    second = QueueStore(tmp_path / "second.sqlite3", worker=ME)
    second.restore_snapshot(document)
    assert second.cursors() == {"g-one": cut}
    feed = second.feed(NO_CLIENT, "g-one")
    for event in events[cut - 5 :]:
        feed.deliver(event)
    assert feed.duplicates == 5
    assert second.state("g-one") == replay(events, group="g-one", worker=ME)
    second.close()
    reopened = QueueStore(tmp_path / "second.sqlite3", worker=ME)
    assert reopened.state("g-one") == replay(events, group="g-one", worker=ME)
    with pytest.raises(SnapshotInvalid):
        reopened.restore_snapshot({**document, "worker": OTHER_WORKER})
    reopened.close()


def test_an_authority_snapshot_moves_the_cursor_with_the_projection_it_gives(
    tmp_path: Path,
) -> None:
    """R16-10, R16-11: what ``EventFeed.restore`` does once the snapshot verifies —
    ``on_snapshot`` then ``store.restore`` — commits the derived queues with the cursor, and
    the next event chains onto the snapshot's hash."""
    events = group_log("g-one", random.Random(13), steps=120)
    cut = len(events) // 2
    state: dict[StateKey, Any] = {}
    for event in events[:cut]:
        decider.apply(state, Fact.of_event(event))
    document = snapshots.build(
        group="g-one",
        sequence=cut,
        event_hash=events[cut - 1]["hash"],
        state=state,
        created_at="2026-12-01T00:00:00.000000Z",
        authority="authority.test",
    )
    store = QueueStore(tmp_path / "w.sqlite3", worker=ME)
    with pytest.raises(SnapshotInvalid):  # nothing staged: the cursor must not move alone
        store.restore("g-one", cut, events[cut - 1]["hash"])
    assert store.cursors() == {}
    feed = store.feed(NO_CLIENT, "g-one")
    assert feed.on_snapshot is not None
    feed.on_snapshot(json.loads(json.dumps(document)))
    store.restore("g-one", cut, document["event_hash"])
    assert store.cursors() == {"g-one": cut}
    replayed = replay(events[:cut], group="g-one", worker=ME)
    assert _timeless(store.queue("g-one")) == _timeless(replayed.queue())
    assert _timeless(store.active("g-one")) == _timeless(replayed.active())
    for event in events[cut:]:
        feed.deliver(event)
    assert store.cursors() == {"g-one": len(events)}
    assert _timeless(store.queue("g-one")) == _timeless(
        replay(events, group="g-one", worker=ME).queue()
    )
    store.close()


def _timeless(rows: list[Any]) -> list[dict[str, Any]]:
    """Rows without what only the history knows (``local_store.from_group_snapshot``)."""
    return sorted(
        (
            {
                name: value
                for name, value in row.items()
                if name not in ("queued_at", "queued_sequence")
            }
            for row in rows
        ),
        key=lambda row: row["work_item"],
    )
