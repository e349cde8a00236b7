"""Signed snapshots over the API and the periodic task (wire.md §4, §7; R16-10, R16-11)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.models import Event, GroupLog, Snapshot
from apps.ledger.projections import load_all
from apps.ledger.replay import replay
from apps.ledger.snapshots import take_as_authority
from apps.ledger.tasks import snapshot_groups
from apps.ledger.write_path import submit_command
from missionweave.protocol import decider
from missionweave.protocol.facts import Fact
from missionweave.protocol.signing import parse_public_key
from missionweave.protocol.snapshots import projections_of, restore, verify_snapshot
from tests.factories import World, group, human, mission_body
from tests.ledger.concurrency import run_in_threads

from .http import API, bearer, error_of, get, json_of, post
from .work_http import Wire, WorkWorld, authorized, owned, started

pytestmark = pytest.mark.django_db


def busy(wire: Wire, ww: WorkWorld) -> None:
    """A group with missions, memberships, an open proposal, dependencies and items in
    several states, so every aggregate kind is in the snapshot."""
    authorized(wire, ww, "wi-1")
    owned(wire, ww, "wi-2", depends_on=["wi-1"])
    started(wire, ww, "wi-3")
    wire.ok(ww.w2, "work.propose", {"proposal": "p-1", "title": "more"})


def take(api: APIClient, ww: WorkWorld, group_id: str | None = None) -> dict[str, Any]:
    return json_of(post(api, f"/groups/{group_id or ww.group}/snapshots", {}, ww.alice.token), 201)


def fetch(api: APIClient, ww: WorkWorld, sequence: int) -> bytes:
    response = get(api, f"/groups/{ww.group}/snapshots/{sequence}", ww.olga.token)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    return response.content


def authority_key(api: APIClient) -> Any:
    return parse_public_key(json_of(get(api, "/authority"), 200)["public_key"])


def event_at(group_id: str, sequence: int) -> dict[str, Any]:
    return json.loads(Event.objects.get(group_id=group_id, sequence=sequence).document)


def test_admin_snapshot_is_the_state_after_s_and_is_recorded_at_s_plus_1(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire.md §4 POST /snapshots: 201 {sequence: S, digest, url}; snapshot.created at S + 1
    by the admin; GET serves it byte for byte, verifiable with the authority key (R16-11);
    its projections equal a full replay at S and the live projections."""
    busy(wire, ww)
    head = GroupLog.objects.get(group_id=ww.group).head_sequence
    answer = take(api, ww)
    assert answer == {
        "sequence": head,
        "digest": answer["digest"],
        "url": f"/api/v1/groups/{ww.group}/snapshots/{head}",
    }
    recorded = event_at(ww.group, head + 1)
    assert recorded["type"] == "snapshot.created"
    assert recorded["actor"] == "user:alice"
    assert recorded["payload"] == {"sequence": head, "digest": answer["digest"]}
    assert GroupLog.objects.get(group_id=ww.group).head_sequence == head + 1

    raw = fetch(api, ww, head)
    assert raw == Snapshot.objects.get(group_id=ww.group, sequence=head).document.encode()
    document = verify_snapshot(
        raw, authority_key(api), digest=answer["digest"], group=ww.group, sequence=head
    )
    assert document["event_hash"] == event_at(ww.group, head)["hash"]
    assert document["authority"] == json_of(get(api, "/authority"), 200)["authority_id"]
    full = replay(ww.group, through=head)
    assert full.chain_break is None
    assert document["projections"] == projections_of(full.state)
    # snapshot.created changes no aggregate: the live rows are still the state at S
    assert document["projections"] == projections_of(load_all(ww.group))
    for kind in ("membership", "mission", "work_item", "proposal", "dependencies"):
        assert document["projections"][kind], kind


def test_snapshot_plus_tail_equals_a_full_replay_at_the_head(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R16-11: restore the snapshot at S, fold the events > S with evolve: the full replay."""
    busy(wire, ww)
    answer = take(api, ww)
    started(wire, ww, "wi-4")
    owned(wire, ww, "wi-5", worker=ww.w3)
    head = GroupLog.objects.get(group_id=ww.group).head_sequence
    document = verify_snapshot(fetch(api, ww, answer["sequence"]), authority_key(api))
    state = restore(document["projections"])
    tail = Event.objects.filter(group_id=ww.group, sequence__gt=answer["sequence"])
    for text in tail.order_by("sequence").values_list("document", flat=True):
        decider.apply(state, Fact.of_event(json.loads(text)))
    assert projections_of(state) == projections_of(replay(ww.group, through=head).state)
    assert projections_of(state) == projections_of(load_all(ww.group))


def test_only_staff_take_and_only_members_read_snapshots(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire.md §4: POST /snapshots needs a staff API token (403 FORBIDDEN otherwise) and the
    body {}; GET is for members (403 NOT_A_MEMBER), an unknown one is 404 NOT_FOUND (§8)."""
    path = f"/groups/{ww.group}/snapshots"
    head = GroupLog.objects.get(group_id=ww.group).head_sequence
    error_of(post(api, path, {}, ww.olga.token), 403, "FORBIDDEN")
    error_of(post(api, path, {}, ww.w1.token), 403, "FORBIDDEN")
    error_of(post(api, path, {}, None), 401, "UNAUTHENTICATED")
    error_of(post(api, path, {"sequence": 1}, ww.alice.token), 400, "MALFORMED")
    error_of(post(api, "/groups/g-nowhere/snapshots", {}, ww.alice.token), 404, "NOT_FOUND")
    assert GroupLog.objects.get(group_id=ww.group).head_sequence == head
    assert not Snapshot.objects.exists()

    sequence = take(api, ww)["sequence"]
    outsider = human("outsider")
    read = f"{path}/{sequence}"
    error_of(get(api, read, outsider.token), 403, "NOT_A_MEMBER")
    error_of(get(api, read, ww.stranger.token), 403, "NOT_A_MEMBER")
    error_of(get(api, f"{path}/{sequence + 1}", ww.olga.token), 404, "NOT_FOUND")
    error_of(get(api, f"{path}/99999999999999999999999", ww.olga.token), 404, "NOT_FOUND")
    assert api.get(API + read, **bearer(ww.w2.token)).status_code == 200


def test_periodic_task_snapshots_only_groups_that_are_due(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R16-10: apps.ledger.tasks.snapshot_groups snapshots a group once it has the configured
    number of new events since its last snapshot, as the authority; others are left alone."""
    group("g-quiet", ww.org)
    busy(wire, ww)
    head = GroupLog.objects.get(group_id=ww.group).head_sequence
    assert head >= 10
    assert snapshot_groups(every_events=10) == [head]
    recorded = event_at(ww.group, head + 1)
    assert (recorded["type"], recorded["actor"]) == ("snapshot.created", "authority")
    assert list(Snapshot.objects.values_list("group_id", flat=True)) == [ww.group]
    # its own snapshot.created does not count: nothing is due until enough new events
    assert snapshot_groups(every_events=10) == []
    started(wire, ww, "wi-9")
    later = GroupLog.objects.get(group_id=ww.group).head_sequence
    fresh = later - (head + 1)  # events after the last snapshot's own snapshot.created
    assert fresh > 0
    assert snapshot_groups(every_events=fresh + 1) == []
    assert snapshot_groups(every_events=fresh) == [later]
    document = verify_snapshot(fetch(api, ww, later), authority_key(api))
    assert document["projections"] == projections_of(replay(ww.group, through=later).state)


@pytest.mark.django_db(transaction=True)
def test_snapshots_taken_while_writers_append_are_exact_and_recorded_next(world: World) -> None:
    """R16-10, wire.md §4: with three writers appending, every snapshot at S is exactly the
    replay at S (events ≤ S only) and its snapshot.created is the event at S + 1."""

    def work(index: int) -> int:
        if index == 3:
            return len([take_as_authority(world.group) for _ in range(6)])
        for number in range(15):
            mission = f"m-{index}-{number}"
            document = world.olga.command(world.group, "mission.create", mission_body(mission))
            submit_command(group_id=world.group, document=document, caller=world.olga.caller)
        return 15

    assert run_in_threads(4, work) == [15, 15, 15, 6]
    snapshots = list(Snapshot.objects.filter(group_id=world.group).order_by("sequence"))
    assert len(snapshots) == 6
    for snapshot in snapshots:
        recorded = event_at(world.group, snapshot.sequence + 1)
        assert recorded["type"] == "snapshot.created"
        assert recorded["payload"] == {"sequence": snapshot.sequence, "digest": snapshot.digest}
        document = json.loads(snapshot.document)
        expected = projections_of(replay(world.group, through=snapshot.sequence).state)
        assert document["projections"] == expected
    assert len(load_all(world.group)) == 3 + 45  # memberships and missions, none lost
