"""Opening a replacement session revokes the agent's active leases in every group before
``POST /sessions`` answers (R11.3-10, wire.md §5), over HTTP.

No Celery worker runs in these tests: whatever the logs hold right after the response was
appended while the request was being served — the new runtime cannot learn its token before
its old leases are gone.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.write_path import Outcome, submit_command
from apps.registry.models import Agent
from apps.work.models import WorkItem as WorkItemRow
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.checks import START_WINDOW
from missionweave.protocol.work.items import WorkItem
from tests import factories
from tests.factories import AgentPersona
from tests.ledger.checks import assert_log_consistent
from tests.ledger.concurrency import run_in_threads

from .http import error_of, json_of, post
from .work_http import (
    Wire,
    WorkWorld,
    build_work_world,
    owned,
    progress_body,
    started,
)

OTHER_GROUP = "g-ops"


@dataclass
class TwoGroups:
    ww: WorkWorld
    research: Wire
    ops: Wire


def two_groups(api: APIClient) -> TwoGroups:
    """``w2`` works for coordinator ``w1`` in ``g-research`` and in ``g-ops``."""
    ww = build_work_world()
    factories.group(OTHER_GROUP, ww.org)
    factories.grant(ww.alice, OTHER_GROUP, ww.w1, "coordinator")
    factories.grant(ww.alice, OTHER_GROUP, ww.w2, "worker")
    return TwoGroups(ww, Wire(api, ww.group, ww.w1), Wire(api, OTHER_GROUP, ww.w1))


def open_session(api: APIClient, agent: AgentPersona) -> dict[str, Any]:
    """``POST /sessions`` for ``agent``; the persona then speaks from the new session."""
    body = json_of(post(api, "/sessions", agent.session_body()), 201)
    agent.token, agent.session_epoch = body["token"], body["session_epoch"]
    return body


@pytest.mark.django_db
def test_a_new_session_revokes_the_leases_in_every_group_before_it_answers(
    api: APIClient,
) -> None:
    """R11.3-10, R11.3-09, wire§5: each group holding an active lease of the agent has a
    ``lease.revoked`` event by the authority, and the item is ``queued`` for the same owner and
    epoch with a fresh start deadline, by the time the 201 arrives; items without an active
    lease are untouched."""
    world = two_groups(api)
    ww = world.ww
    leases = {
        "research": started(world.research, ww, "wi-a"),
        "ops": started(world.ops, ww, "wi-b"),
    }
    owned(world.research, ww, "wi-waiting")  # queued, never started: no lease to revoke
    heads = {name: wire.head() for name, wire in (("research", world.research), ("ops", world.ops))}
    old_epoch = ww.w2.session_epoch

    session = open_session(api, ww.w2)

    assert session["session_epoch"] == old_epoch + 1
    for name, wire, work_item in (
        ("research", world.research, "wi-a"),
        ("ops", world.ops, "wi-b"),
    ):
        [revoked] = wire.events(after=heads[name])
        assert (revoked["type"], revoked["actor"]) == ("lease.revoked", AUTHORITY)
        assert revoked["payload"] == {
            "work_item": work_item,
            "lease_id": leases[name],
            "agent": ww.w2.principal,
            "reason": "session_replaced",
            "session_epoch": old_epoch,
            "replaced_by_session_epoch": old_epoch + 1,
            # R11.3-02: a fresh start window from the revocation (authority clock)
            "start_deadline": format_timestamp(
                parse_timestamp(revoked["recorded_at"]) + START_WINDOW
            ),
        }
        item = wire.item(work_item)
        assert (item["state"], item["owner"], item["ownership_epoch"]) == (
            S.QUEUED,
            ww.w2.principal,
            1,
        )
        assert item["start_deadline"] == revoked["payload"]["start_deadline"]
        assert (item["lease"]["lease_id"], item["lease"]["status"]) == (leases[name], "revoked")
        assert item["lease"]["closed_by"] == "lease.revoked"
    waiting = world.research.item("wi-waiting")
    assert (waiting["state"], waiting["lease"]) == (S.QUEUED, None)


@pytest.mark.django_db
def test_after_replacement_the_old_session_is_stale_and_the_new_one_starts_a_fresh_lease(
    api: APIClient,
) -> None:
    """R11.3-10, R11.3-03, R11.3-05: the old token is STALE_SESSION; the new runtime starts
    the item again with a new lease id bound to the new session epoch, and the revoked lease
    id is then STALE_LEASE."""
    world = two_groups(api)
    ww, wire = world.ww, world.research
    old_lease = started(wire, ww, "wi-a")
    old = copy.copy(ww.w2)
    open_session(api, ww.w2)

    stale = wire.send(old, "lease.renew", {"work_item": "wi-a", "lease_id": old_lease})
    assert error_of(stale, 401, "STALE_SESSION")["requirement"] == "R11.3-10"
    # the new session, before starting: the revoked lease is not the current one (queued,
    # no lease), so its id is STALE_LEASE before the state is looked at (wire.md §8)
    wire.refused(
        ww.w2,
        "lease.renew",
        {"work_item": "wi-a", "lease_id": old_lease},
        409,
        "STALE_LEASE",
        "R11.3-05",
    )
    answer = wire.ok(ww.w2, "work.start", {"work_item": "wi-a", "ownership_epoch": 1})
    new_lease = answer["result"]["lease"]["lease_id"]
    assert new_lease != old_lease
    item = wire.item("wi-a")
    assert item["state"] == S.ACTIVE
    assert item["lease"]["lease_id"] == new_lease
    assert item["lease"]["session_epoch"] == ww.w2.session_epoch == old.session_epoch + 1
    assert item["lease_history"][-1]["lease_id"] == old_lease
    assert item["lease_history"][-1]["status"] == "revoked"
    error = wire.refused(
        ww.w2, "work.progress", progress_body("wi-a", old_lease), 409, "STALE_LEASE"
    )
    assert error["requirement"] == "R11.3-05"
    wire.ok(ww.w2, "work.progress", progress_body("wi-a", new_lease))


@pytest.mark.django_db
def test_a_second_replacement_revokes_only_what_the_previous_session_holds(
    api: APIClient,
) -> None:
    """R11.3-10: the next session revokes the lease the previous one started; an item whose
    lease was already revoked (and not restarted) gets no second event."""
    world = two_groups(api)
    ww = world.ww
    started(world.research, ww, "wi-a")
    started(world.ops, ww, "wi-b")
    open_session(api, ww.w2)
    restarted = world.research.ok(ww.w2, "work.start", {"work_item": "wi-a", "ownership_epoch": 1})[
        "result"
    ]["lease"]["lease_id"]
    heads = (world.research.head(), world.ops.head())
    open_session(api, ww.w2)
    [revoked] = world.research.events(after=heads[0])
    assert revoked["payload"]["lease_id"] == restarted
    assert revoked["payload"]["session_epoch"] == ww.w2.session_epoch - 1
    assert world.ops.events(after=heads[1]) == []


# --- the race: old-session commands while the new session opens -------------------------------

ROUNDS = 4
OLD_SESSION_THREADS = 6
COMMANDS_PER_THREAD = 4
ITEMS = ("wi-r0", "wi-r1", "wi-r2", "wi-r3", "wi-r4", "wi-r5")


def _send(agent: AgentPersona, group: str, type_: str, body: dict[str, Any]) -> Any:
    try:
        return submit_command(
            group_id=group, document=agent.command(group, type_, body), caller=agent.caller
        )
    except ProtocolError as refusal:
        return refusal


Answer = tuple[str, str, str, Outcome | ProtocolError]  # type, group, work item, answer


def _old_session_work(old: AgentPersona, places: list[tuple[str, str]], index: int) -> list[Answer]:
    """An old runtime that has not noticed the replacement: start what it owns, renew and
    report on what it runs — through the write path, past the token check, so only the
    session epoch re-read under the group lock can fence it."""
    answers = []
    for step in range(COMMANDS_PER_THREAD):
        group, work_item = places[(index + step) % len(places)]
        row = WorkItemRow.objects.get(group_id=group, work_item_id=work_item).to_state()
        if row.state == S.QUEUED:
            type_, body = "work.start", {"work_item": work_item, "ownership_epoch": 1}
        else:
            lease_id = row.lease.lease_id if row.lease is not None else "lease_none"
            type_, body = "lease.renew", {"work_item": work_item, "lease_id": lease_id}
        answers.append((type_, group, work_item, _send(old, group, type_, body)))
    return answers


def _active_leases_of(agent: AgentPersona) -> list[WorkItem]:
    rows = WorkItemRow.objects.filter(lease_holder=agent.principal)
    return [row.to_state() for row in rows]


@pytest.mark.django_db(transaction=True)
def test_old_session_commands_racing_a_new_session_leave_no_lease_of_the_old_session() -> None:
    """R11.3-10: threads of the old runtime start and renew leases while a new session opens
    over HTTP; whichever lands first, once ``POST /sessions`` has answered no active lease
    bound to an older session epoch exists in any group, every old-session command was
    accepted before the replacement or refused, and each lease an old-session start won was
    revoked."""
    api = APIClient()
    world = two_groups(api)
    ww = world.ww
    places = [
        (world.research.group if n % 2 == 0 else OTHER_GROUP, item) for n, item in enumerate(ITEMS)
    ]
    for n, (group, work_item) in enumerate(places):
        wire = world.research if group == world.research.group else world.ops
        if n % 3 == 0:
            owned(wire, ww, work_item)  # queued: an old-session start may race the revocation
        else:
            started(wire, ww, work_item)
    outcomes: Counter[str] = Counter()
    for round_ in range(ROUNDS):
        old = copy.copy(ww.w2)
        opened: dict[str, Any] = {}

        def work(
            index: int,
            old: AgentPersona = old,
            opened: dict[str, Any] = opened,
            delay: int = round_,
        ) -> Any:
            if index == 0:
                time.sleep(0.005 * delay)  # let some old commands go first, more each round
                response = post(APIClient(), "/sessions", ww.w2.session_body())
                opened.update(json_of(response, 201))
                return []
            return _old_session_work(old, places, index)

        answers = [a for thread in run_in_threads(OLD_SESSION_THREADS + 1, work) for a in thread]
        new_epoch = opened["session_epoch"]
        assert new_epoch == old.session_epoch + 1
        assert Agent.objects.get(pk=ww.w2.id).session_epoch == new_epoch

        # R11.3-10: nothing of the old session still runs anywhere (and the new one ran nothing)
        leftover = [(item.id, item.lease) for item in _active_leases_of(ww.w2)]
        assert leftover == [], f"round {round_}: leases survived the replacement: {leftover}"
        for type_, group, work_item, answer in answers:
            outcomes[f"{type_} -> {_label(answer)}"] += 1
            if isinstance(answer, ProtocolError):
                # accepted before the replacement, or refused — never anything else, never a 5xx
                assert answer.code in (
                    ErrorCode.STALE_SESSION,  # after the new epoch committed (R11.3-10)
                    ErrorCode.ILLEGAL_TRANSITION,  # start of a running item, renew of a queued
                    ErrorCode.STALE_LEASE,  # renew naming a lease restarted in between
                ), (type_, work_item, answer)
            elif type_ == "work.start":
                # a start that won the race got a lease, and the replacement revoked it
                lease_id = answer.body["result"]["lease"]["lease_id"]
                row = WorkItemRow.objects.get(group_id=group, work_item_id=work_item)
                lease = row.to_state().lease_named(lease_id)
                assert lease is not None
                assert (lease.status, lease.closed_by) == ("revoked", "lease.revoked")
                assert lease.session_epoch == old.session_epoch

        # the next round: the new session restarts what it ran (the rest stays queued)
        ww.w2.token, ww.w2.session_epoch = opened["token"], new_epoch
        for n, (group, work_item) in enumerate(places):
            if n % 3 != 0:
                body = {"work_item": work_item, "ownership_epoch": 1}
                assert isinstance(_send(ww.w2, group, "work.start", body), Outcome)

    print("\n" + json.dumps(outcomes, indent=1, sort_keys=True))
    for group in (world.research.group, OTHER_GROUP):
        assert_log_consistent(group)
    # the race was real: some old-session starts won the lock before the revocation visited
    # (and lost their lease to it), others came after the new epoch committed
    assert outcomes["work.start -> accepted"] > 0
    assert sum(n for key, n in outcomes.items() if key.endswith("STALE_SESSION")) > 0


def _label(answer: Outcome | ProtocolError) -> str:
    return "accepted" if isinstance(answer, Outcome) else str(answer.code)
