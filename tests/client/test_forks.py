"""A history rewritten after a head was seen cannot go unseen (issue 33 §2; R16-10, R16-11).

The attacker here holds the schema owner's role, the strongest short of the authority's
signing key: it switches the triggers off, rewrites an event, re-chains every hash after it,
moves the head and deletes the signed heads it contradicts (``tests/ledger/rewrites.py``), so
the forged history verifies on its own and the server signs it. Whoever verified a head
before the rewrite proves the contradiction: the client SDK (its cursor store keeps the
highest signed head per group, across restarts) and ``verify_export --known-head``. Against a
real server and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.ledger.models import GroupLog
from missionweave.client import AgentClient, ChainBroken, CursorStore, EventFeed, HistoryForked
from tests.factories import World, build_world, mission_body
from tests.ledger.rewrites import rewrite_history
from tests.live_server import LiveServer


@pytest.fixture
def live_world(transactional_db: None) -> World:
    return build_world()


def _client(server: LiveServer, world: World) -> AgentClient:
    return AgentClient(server.url, "w1", world.w1.key, sleep=lambda _s: None)


def _missions(client: AgentClient, group: str, count: int) -> None:
    for _ in range(count):
        client.submit(group, "mission.create", mission_body())


def _feed(client: AgentClient, store: CursorStore, group: str) -> EventFeed:
    return EventFeed(client, store, group, lambda _event: None)


def _export(group: str, path: Path) -> Path:
    call_command("export_group", group, "--output", str(path))
    return path


def test_the_sdk_refuses_a_head_signed_again_over_a_rewritten_history(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """The client verified head N; the owner rewrites event N-2 onwards and the server
    signs a new head N over the forgery: two heads signed for one sequence, so the client
    raises ``HistoryForked`` naming both, even after a restart (a new store on the same file)."""
    group = live_world.group
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 4)
        seen = _feed(client, CursorStore(tmp_path / "c.sqlite"), group).verify_head()
        rewrite_history(group, from_sequence=seen["sequence"] - 2)

        restarted = _feed(client, CursorStore(tmp_path / "c.sqlite"), group)
        with pytest.raises(HistoryForked) as raised:
            restarted.verify_head()
    fork = raised.value
    assert fork.known == seen
    assert fork.offered["sequence"] == seen["sequence"]
    assert fork.offered["hash"] != seen["hash"]
    assert "two heads signed for sequence" in str(fork)
    assert seen["hash"] in str(fork)
    assert fork.offered["hash"] in str(fork)


def test_the_sdk_refuses_a_later_head_and_events_that_do_not_follow_the_one_it_saw(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """After the rewrite more commands land: the new head does not follow the kept one, and
    a reader that had not yet read up to the kept head's sequence refuses the forged event
    there, whatever chain it arrives on."""
    group = live_world.group
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 4)
        behind = _feed(client, CursorStore(tmp_path / "behind.sqlite"), group)
        behind.catch_up(through=2)
        seen = behind.check_head()  # kept, not yet reached
        ahead = _feed(client, CursorStore(tmp_path / "ahead.sqlite"), group)
        ahead.verify_head()

        rewrite_history(group, from_sequence=3)
        _missions(client, group, 2)

        with pytest.raises(HistoryForked) as at_event:
            behind.catch_up()
        with pytest.raises(ChainBroken):
            ahead.catch_up()  # the next event does not chain onto what it verified
        with pytest.raises(HistoryForked):
            ahead.check_head()
    assert at_event.value.sequence == seen["sequence"]
    assert at_event.value.known == seen
    assert at_event.value.offered["sequence"] == seen["sequence"]


def test_verify_export_with_a_known_head_catches_the_rewrite_the_file_alone_hides(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """The forged export verifies on its own (its chain and signed head are consistent);
    with the head seen earlier as ``--known-head`` it fails naming the fork."""
    group = live_world.group
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 4)
        seen = client.signed_head(group)
    head_file = tmp_path / "head.json"
    head_file.write_text(json.dumps(seen))
    rewrite_history(group, from_sequence=2)
    forged = _export(group, tmp_path / "forged.jsonl")

    call_command("verify_export", str(forged))  # consistent on its own: the point
    with pytest.raises(CommandError, match=r"fork: event \d+ has hash"):
        call_command("verify_export", str(forged), f"--known-head={head_file}")
    with pytest.raises(CommandError, match="fork"):
        call_command("verify_export", str(forged), f"--known-head={json.dumps(seen)}")


def test_an_export_cut_before_a_known_head_is_refused(
    live_asgi_server: LiveServer, live_world: World, tmp_path: Path
) -> None:
    """A head from the future of the file (the history was cut back) is a contradiction."""
    group = live_world.group
    with _client(live_asgi_server, live_world) as client:
        _missions(client, group, 1)
        earlier = _export(group, tmp_path / "earlier.jsonl")
        _missions(client, group, 2)
        later: dict[str, Any] = client.signed_head(group)
    assert later["sequence"] > GroupLog.objects.get(group_id=group).head_sequence - 1
    with pytest.raises(CommandError, match="history was cut"):
        call_command("verify_export", str(earlier), f"--known-head={json.dumps(later)}")
    call_command(
        "verify_export",
        str(_export(group, tmp_path / "now.jsonl")),
        f"--known-head={json.dumps(later)}",
    )
