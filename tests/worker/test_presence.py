"""The Worker reports its Presence, its current capacity (R11.1-11; wire.md §4 ``/presence``).

A report at start, then whenever the capacity changed (not more often than ``min_interval_s``)
and at least every ``interval_s`` while nothing changes; offline it waits for the authority.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from missionweave.protocol import states as S
from missionweave.worker.config import ConfigError, load_config
from missionweave.worker.link import Offline
from missionweave.worker.presence import PresenceReporter, presence_report
from missionweave.worker.resources import ResourceLedger, needs_of

from .runtime_world import Gate, world
from .scheduler_sim import T0
from .test_config import VALID, _write

ALPHA = "g-alpha"


def test_the_report_says_free_slots_of_slots_and_each_resources_free_of_total() -> None:
    """R11.1-11: capacity as a whole (R11.2-02: nothing by group)."""
    ledger = ResourceLedger({"gpu": 2})
    ledger.hold(("g1", "a"), needs_of({"gpu": 1}))
    assert presence_report(3, 2, ledger) == {
        "slots": 3,
        "slots_free": 2,
        "resources": {"gpu": {"total": 2.0, "free": 1.0}},
    }


def test_reports_come_at_start_on_change_and_at_least_every_interval() -> None:
    """R11.1-11: current capacity, without a report per tick."""
    sent: list[dict[str, object]] = []
    reporter = PresenceReporter(interval_s=30, min_interval_s=2)

    def call(action: object) -> object:
        return action()  # type: ignore[operator]

    def report(send_at: float, free: int) -> None:
        body = {"slots": 2, "slots_free": free, "resources": {}}
        reporter.check(T0 + timedelta(seconds=send_at), body, sent.append, call)

    report(0, 2)  # the first: at start
    report(1, 2)  # unchanged
    report(1.5, 1)  # changed, but too soon after the last
    report(2, 1)  # changed, and due
    report(20, 1)  # unchanged within the interval
    report(32, 1)  # the interval passed
    assert [(b["slots_free"]) for b in sent] == [2, 1, 1]


def test_offline_the_report_waits_and_is_sent_once_back() -> None:
    """R11.5-04: no presence reaches an authority that is away; it is sent once back."""
    sent: list[dict[str, object]] = []
    reporter = PresenceReporter(interval_s=30, min_interval_s=2)
    body = {"slots": 1, "slots_free": 1, "resources": {}}

    def away(action: object) -> object:
        raise Offline(T0)

    reporter.check(T0, body, sent.append, away)
    reporter.check(T0 + timedelta(seconds=1), body, sent.append, lambda action: action())
    assert sent == [body]


def test_the_running_worker_reports_a_taken_slot(tmp_path: Path) -> None:
    """R11.1-11 end to end in the runtime: free slots, then one fewer while an item runs."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}, slots=2, resources={"gpu": 1}) as w:
        w.until(lambda: bool(w.authority.presence))
        assert w.authority.presence[0] == {
            "slots": 2,
            "slots_free": 2,
            "resources": {"gpu": {"total": 1.0, "free": 1.0}},
        }
        w.authority.story(ALPHA, "wi-1", resources={"max_concurrency": 1, "gpu": 1})
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.ACTIVE and gate.started.is_set())
        w.clock.advance(3)
        w.until(lambda: w.authority.presence[-1]["slots_free"] == 1)
        assert w.authority.presence[-1]["resources"] == {"gpu": {"total": 1.0, "free": 0.0}}
        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)


def test_the_config_sets_how_often_presence_is_reported(tmp_path: Path) -> None:
    """R11.1-11: every 30 s by default; ``presence_s`` from 1 s to an hour."""
    assert load_config(_write(tmp_path, VALID)).presence_s == 30.0
    config = load_config(_write(tmp_path, "presence_s = 5\n" + VALID))
    assert config.presence_s == 5.0
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, "presence_s = 0\n" + VALID))
    assert caught.value.path == "presence_s"
