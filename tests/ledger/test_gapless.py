"""Gapless, hash-chained logs under real contention on PostgreSQL (wire.md §6, R16).

16 agents, each in its own thread with its own session and connection, are coordinators in
the same 8 groups and send 200 ``mission.create`` commands to each group (25,600 commands;
``make test`` runs a sample of 4 groups and 50 commands each, 3,200 commands: tests/proofs.py).
Mixed in on purpose: commands that blow up *after* their events were inserted (in the
projection step and in the head update), commands refused by ``decide`` (a mission id the
thread already created, and ids that all 16 threads race for). Afterwards every log must be
exactly 1..n, chained, with its head at n, and hold exactly the accepted commands.
"""

from __future__ import annotations

import io
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.management import call_command

from apps.ledger import head as heads
from apps.ledger import projections
from apps.ledger.models import CommandRecord, Event
from apps.ledger.projections import save_aggregates as real_save_aggregates
from apps.ledger.write_path import submit_command
from apps.work.models import Mission
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests import factories, proofs
from tests.ledger.checks import assert_log_consistent
from tests.ledger.concurrency import run_in_threads

THREADS = 16
GROUPS = proofs.size(sample=4, full=8)
PER_GROUP = proofs.size(sample=50, full=200)  # commands per thread per group (a multiple of 50)
BOOM_PROJECTION = "boom-p-"  # fails in save_aggregates, after the events were inserted
BOOM_HEAD = "boom-h-"  # fails in save_head, after events, projections and CommandRecord


@dataclass
class Tally:
    """What one thread saw."""

    accepted: dict[str, list[tuple[str, str, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(list)
    )  # group -> [(command id, mission id, response body)]
    refused: list[tuple[str, str, str, ErrorCode]] = field(default_factory=list)
    exploded: list[tuple[str, str]] = field(default_factory=list)  # (group, command id)


def _plan(thread: int, group: str, k: int, previous_mission: str) -> tuple[str, str]:
    """(command id, mission id) of the ``k``-th command of ``thread`` in ``group``."""
    slot = k % 50
    tag = f"{thread}-{group}-{k}"
    if slot == 7:
        return f"{BOOM_PROJECTION}{tag}", f"{BOOM_PROJECTION}{tag}"
    if slot == 23:
        return f"{BOOM_HEAD}{tag}", f"{BOOM_HEAD}{tag}"
    if slot == 41:
        return f"shr-{tag}", f"shared-{k // 50}"  # all 16 threads race for this id
    if slot == 45:
        return f"dup-{tag}", previous_mission  # this thread created it a moment ago
    return f"c-{tag}", f"m-{tag}"


def _explode_in_projection(group_id: str, state: Any, keys: Any, *, existing: Any) -> None:
    keys = list(keys)
    real_save_aggregates(group_id, state, keys, existing=existing)
    if any(ident.startswith(BOOM_PROJECTION) for _, ident in keys):
        raise RuntimeError("projection failed after append")


def _explode_in_head(real_save_head: Any) -> Any:
    def save_head(head: heads.Head) -> None:
        real_save_head(head)
        if any(e["command_id"].startswith(BOOM_HEAD) for e in head.appended):
            raise RuntimeError("head update failed after append")

    return save_head


pytestmark = pytest.mark.proof


# At full size 25,600 contended commands take 3.5–9 min on a 2-core machine: pytest's default
# 300 s limit left too little margin (a timed-out run leaves its threads writing into teardown)
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_concurrent_commands_leave_gapless_chained_logs_with_only_accepted_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """wire§6, R16: sequences 1..n without gaps or duplicates under 16 threads x GROUPS groups;
    a command that fails after its events were inserted, or is refused, leaves no event,
    projection row or CommandRecord; the head row holds n and the last hash."""
    org = factories.organization()
    groups = [factories.group(f"g-load-{n}", org) for n in range(GROUPS)]
    alice = factories.human("alice", staff=True)
    agents = [factories.agent(f"a{n}", org) for n in range(THREADS)]
    for persona in agents:
        for group_id in groups:
            factories.grant(alice, group_id, persona, "coordinator")
        persona.open_session()

    monkeypatch.setattr(projections, "save_aggregates", _explode_in_projection)
    monkeypatch.setattr(heads, "save_head", _explode_in_head(heads.save_head))

    def work(thread: int) -> Tally:
        persona, tally = agents[thread], Tally()
        previous: dict[str, str] = {}
        for i in range(PER_GROUP * GROUPS):
            group_id, k = groups[i % GROUPS], i // GROUPS
            command_id, mission_id = _plan(thread, group_id, k, previous.get(group_id, ""))
            document = persona.command(
                group_id, "mission.create", factories.mission_body(mission_id), id=command_id
            )
            try:
                outcome = submit_command(
                    group_id=group_id, document=document, caller=persona.caller
                )
            except ProtocolError as refusal:
                tally.refused.append((group_id, command_id, mission_id, refusal.code))
            except RuntimeError:
                tally.exploded.append((group_id, command_id))
            else:
                assert not outcome.replayed
                tally.accepted[group_id].append((command_id, mission_id, outcome.body))
                previous[group_id] = mission_id
        return tally

    started = time.perf_counter()
    tallies = run_in_threads(THREADS, work)
    elapsed = time.perf_counter() - started
    total = THREADS * GROUPS * PER_GROUP
    print(f"\n{total} commands in {elapsed:.1f} s ({total / elapsed:.0f}/s)")

    exploded = [command for tally in tallies for command in tally.exploded]
    refused = [item for tally in tallies for item in tally.refused]
    rounds = PER_GROUP // 50  # each kind of trouble comes once per 50 commands
    assert len(exploded) == THREADS * GROUPS * rounds * 2
    assert Counter(code for *_, code in refused) == {
        ErrorCode.ILLEGAL_TRANSITION: THREADS * GROUPS * rounds + (THREADS - 1) * GROUPS * rounds
    }

    for group_id in groups:
        accepted = [item for tally in tallies for item in tally.accepted[group_id]]
        documents = assert_log_consistent(group_id)
        by_command = {d["command_id"]: d for d in documents}
        grants = [d for d in documents if d["type"] == "membership.granted"]
        assert len(grants) == THREADS
        # exactly the accepted commands, one event each, at the sequence their response gave
        assert len(documents) == THREADS + len(accepted)
        for command_id, mission_id, body in accepted:
            (reported,) = body["events"]
            stored = by_command[command_id]
            assert (stored["sequence"], stored["event_id"]) == (
                reported["sequence"],
                reported["event_id"],
            )
            assert stored["payload"]["mission"] == mission_id
        # each raced id was won by exactly one thread
        winners = Counter(m for _, m, _ in accepted if m.startswith("shared-"))
        assert winners == {f"shared-{n}": 1 for n in range(rounds)}
        assert CommandRecord.objects.filter(group_id=group_id).count() == len(documents)
        missions = dict(
            Mission.objects.filter(group_id=group_id).values_list("mission_id", "created_sequence")
        )
        assert missions == {m: by_command[c]["sequence"] for c, m, _ in accepted}

    failed_ids = [command_id for _, command_id in exploded] + [c for _, c, _, _ in refused]
    assert not Event.objects.filter(command_id__in=failed_ids).exists()
    assert not CommandRecord.objects.filter(command_id__in=failed_ids).exists()
    assert not Mission.objects.filter(mission_id__startswith="boom-").exists()
    out = io.StringIO()
    call_command("rebuild_projections", "--verify", stdout=out, stderr=io.StringIO())
    assert out.getvalue().count("projections match") == GROUPS
