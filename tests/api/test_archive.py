"""The archive and ``CURSOR_TOO_OLD`` over the API (wire.md §4, §7; R16-08, R16-10, R16-11).

``POST /groups/{g}/archive`` moves events ≤ S from the online log into the archive table in
one transaction; history is never deleted, so export, verification and rebuilds still see all
of it, while ``GET /events`` below the online floor answers 410 with the snapshot to restore.
Real PostgreSQL, including the immutability triggers that allow the move and nothing else.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from rest_framework.test import APIClient

from apps.ledger.models import ArchivedEvent, Event, GroupLog
from apps.ledger.projections import load_all
from apps.ledger.replay import replay
from missionweave.protocol import decider
from missionweave.protocol.facts import Fact
from missionweave.protocol.signing import parse_public_key
from missionweave.protocol.snapshots import projections_of, restore, verify_snapshot

from .http import error_of, get, json_of, post
from .work_http import Wire, WorkWorld, authorized, owned, started

pytestmark = pytest.mark.django_db


def busy(wire: Wire, ww: WorkWorld) -> None:
    authorized(wire, ww, "wi-1")
    owned(wire, ww, "wi-2", depends_on=["wi-1"])
    started(wire, ww, "wi-3")


def head(group_id: str) -> int:
    return GroupLog.objects.get(group_id=group_id).head_sequence


def snapshot(api: APIClient, ww: WorkWorld) -> dict[str, Any]:
    return json_of(post(api, f"/groups/{ww.group}/snapshots", {}, ww.alice.token), 201)


def archive(api: APIClient, ww: WorkWorld, through: Any, token: str | None = None) -> Any:
    return post(api, f"/groups/{ww.group}/archive", {"through": through}, token or ww.alice.token)


def documents(model: type[Event] | type[ArchivedEvent], group_id: str) -> dict[int, str]:
    rows = model.objects.filter(group_id=group_id).values_list("sequence", "document")
    return dict(rows)


def archived_world(api: APIClient, wire: Wire, ww: WorkWorld) -> tuple[dict[str, Any], int]:
    """Events, a snapshot at S, more events, then ``archive through S``: (snapshot, S)."""
    busy(wire, ww)
    taken = snapshot(api, ww)
    owned(wire, ww, "wi-4", worker=ww.w3)
    assert json_of(archive(api, ww, taken["sequence"]), 200) == {
        "group": ww.group,
        "archived_through": taken["sequence"],
    }
    return taken, taken["sequence"]


def test_archive_without_a_snapshot_at_or_after_s_is_snapshot_required(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§4, R16-10: 409 SNAPSHOT_REQUIRED unless a snapshot at some sequence ≥ S exists;
    nothing moves."""
    busy(wire, ww)
    error = error_of(archive(api, ww, 3), 409, "SNAPSHOT_REQUIRED")
    assert error["requirement"] == "R16-10"
    assert error["details"]["snapshot"] is None
    taken = snapshot(api, ww)
    beyond = taken["sequence"] + 1  # snapshot.created, after the snapshot
    error = error_of(archive(api, ww, beyond), 409, "SNAPSHOT_REQUIRED")
    assert error["details"]["snapshot"]["sequence"] == taken["sequence"]
    assert not ArchivedEvent.objects.exists()
    assert len(documents(Event, ww.group)) == head(ww.group)
    assert GroupLog.objects.get(group_id=ww.group).archived_through == 0


def test_only_a_staff_token_may_archive(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """wire§4: admin endpoint; a member's human or agent token is FORBIDDEN, none is 401."""
    busy(wire, ww)
    taken = snapshot(api, ww)
    for token in (ww.olga.token, ww.base.w2.token):
        error_of(archive(api, ww, taken["sequence"], token), 403, "FORBIDDEN")
    response = post(api, f"/groups/{ww.group}/archive", {"through": 1})
    error_of(response, 401, "UNAUTHENTICATED")
    assert not ArchivedEvent.objects.exists()


@pytest.mark.parametrize(
    "body", [{}, {"through": -1}, {"through": "3"}, {"through": True}, {"through": 1, "x": 1}]
)
def test_a_malformed_archive_body_is_malformed(api: APIClient, ww: WorkWorld, body: Any) -> None:
    """wire§4: the body is exactly {"through": S}, S a non-negative integer."""
    error_of(post(api, f"/groups/{ww.group}/archive", body, ww.alice.token), 400, "MALFORMED")


def test_archive_moves_events_unchanged_and_is_idempotent(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R16-08: events ≤ S leave the online log for the archive byte for byte, never deleted;
    a second call with the same or a smaller S changes nothing."""
    busy(wire, ww)
    taken = snapshot(api, ww)
    owned(wire, ww, "wi-4", worker=ww.w3)
    before = documents(Event, ww.group)
    s = taken["sequence"]
    json_of(archive(api, ww, s), 200)
    archived, online = documents(ArchivedEvent, ww.group), documents(Event, ww.group)
    assert set(archived) == set(range(1, s + 1))
    assert set(online) == set(range(s + 1, head(ww.group) + 1))
    assert {**archived, **online} == before
    for again in (s, s - 2, 0):
        assert json_of(archive(api, ww, again), 200) == {"group": ww.group, "archived_through": s}
    assert documents(ArchivedEvent, ww.group) == archived
    assert documents(Event, ww.group) == online


def test_events_below_the_floor_are_cursor_too_old_with_a_verifiable_snapshot(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§4, §7, R16-10, R16-11: GET /events?after=N with N < archived_through is 410
    CURSOR_TOO_OLD naming the snapshot {sequence, digest, url}; that snapshot verifies with the
    authority key, and it plus the online tail equals the live projections; N ≥ floor works."""
    taken, s = archived_world(api, wire, ww)
    for after in (0, 1, s - 1):
        response = get(api, f"/groups/{ww.group}/events?after={after}", ww.olga.token)
        error = error_of(response, 410, "CURSOR_TOO_OLD")
        assert error["details"]["snapshot"] == taken
        assert error["details"]["archived_through"] == s
    page = json_of(get(api, f"/groups/{ww.group}/events?after={s}", ww.olga.token), 200)
    assert [e["sequence"] for e in page["events"]] == list(range(s + 1, head(ww.group) + 1))

    key = parse_public_key(json_of(get(api, "/authority"), 200)["public_key"])
    raw = get(api, taken["url"].removeprefix("/api/v1"), ww.olga.token).content
    document = verify_snapshot(raw, key, digest=taken["digest"], group=ww.group, sequence=s)
    state = restore(document["projections"])
    for event in page["events"]:
        decider.apply(state, Fact.of_event(event))
    assert projections_of(state) == projections_of(load_all(ww.group))


def test_export_and_verify_export_cover_the_archive_and_the_online_log(
    api: APIClient, wire: Wire, ww: WorkWorld, tmp_path: Path
) -> None:
    """R16-08: history stays exportable and verifiable: the export holds every event 1..head,
    archived ones first, and verify_export accepts its chain against the signed head."""
    _, s = archived_world(api, wire, ww)
    path = tmp_path / "export.jsonl"
    call_command("export_group", ww.group, "--output", str(path), stderr=io.StringIO())
    lines = path.read_bytes().splitlines()
    events = [json.loads(line) for line in lines[1:-1]]
    assert [e["sequence"] for e in events] == list(range(1, head(ww.group) + 1))
    assert s < head(ww.group)
    out = io.StringIO()
    call_command("verify_export", str(path), stdout=out)
    assert f"{head(ww.group)} events, chain intact" in out.getvalue()


def test_replay_and_rebuild_projections_read_the_archive(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """Projections are disposable over archive + online: a replay has no chain break and
    rebuild_projections --verify matches, then a plain rebuild still matches."""
    archived_world(api, wire, ww)
    full = replay(ww.group, through=head(ww.group))
    assert full.chain_break is None
    assert full.events == head(ww.group)
    assert projections_of(full.state) == projections_of(load_all(ww.group))
    for args in (("--group", ww.group, "--verify"), ("--group", ww.group)):
        out = io.StringIO()
        call_command("rebuild_projections", *args, stdout=out, stderr=io.StringIO())
    assert projections_of(load_all(ww.group)) == projections_of(full.state)


def test_the_triggers_allow_only_the_archive_move(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R16-08: an online event not copied to the archive cannot be deleted; archived rows
    can be neither updated nor deleted."""
    _, s = archived_world(api, wire, ww)
    statements = [
        ("DELETE FROM ledger_event WHERE group_id = %s AND sequence = %s", s + 1),
        ("DELETE FROM ledger_archivedevent WHERE group_id = %s AND sequence = %s", 1),
        ("UPDATE ledger_archivedevent SET actor = 'x' WHERE group_id = %s AND sequence = %s", 1),
    ]
    for sql, sequence in statements:
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [ww.group, sequence])
    assert len(documents(ArchivedEvent, ww.group)) == s
    assert len(documents(Event, ww.group)) == head(ww.group) - s
