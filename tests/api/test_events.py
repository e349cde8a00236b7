"""``GET /groups/{g}/events`` paging and the signed ``/head`` (wire.md §4, §6)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger import selectors
from apps.ledger.models import GroupLog
from missionweave.protocol.canonical import ZERO_HASH, canonical_bytes, without
from missionweave.protocol.events import EVENT_FIELDS, event_hash, first_chain_break
from missionweave.protocol.signing import parse_public_key, verify
from missionweave.protocol.timefmt import parse_timestamp
from tests.factories import World, mission_body

from .http import error_of, get, head_sequence, json_of, post, submit

pytestmark = pytest.mark.django_db


def events(api: APIClient, world: World, query: str = "") -> dict[str, Any]:
    return json_of(get(api, f"/groups/{world.group}/events{query}", world.w1.token), 200)


def add_missions(api: APIClient, world: World, count: int) -> None:
    """``count`` mission.create commands from olga, in batches of 500 (one request each)."""
    while count > 0:
        size = min(count, 500)
        commands = [
            world.olga.command(world.group, "mission.create", mission_body()) for _ in range(size)
        ]
        path = f"/groups/{world.group}/commands:batch"
        results = json_of(post(api, path, {"commands": commands}, world.olga.token), 200)
        assert [item["status"] for item in results["results"]] == [201] * size
        count -= size


def test_page_has_events_head_and_next_after(api: APIClient, world: World) -> None:
    """wire§4: {"events", "head", "next_after"}; every event has the §6 fields."""
    add_missions(api, world, 2)
    page = events(api, world)
    assert set(page) == {"events", "head", "next_after"}
    assert page["head"] == head_sequence(world.group) == 5
    assert [e["sequence"] for e in page["events"]] == [1, 2, 3, 4, 5]
    assert page["next_after"] == 5
    for event in page["events"]:
        assert set(event) == {*EVENT_FIELDS, "hash"}
        assert event["group"] == world.group
        parse_timestamp(event["recorded_at"])


def test_after_and_limit_select_a_window(api: APIClient, world: World) -> None:
    """wire§4: events with sequence > after, in order, at most limit of them."""
    add_missions(api, world, 4)  # head 7
    page = events(api, world, "?after=2&limit=3")
    assert [e["sequence"] for e in page["events"]] == [3, 4, 5]
    assert (page["next_after"], page["head"]) == (5, 7)
    rest = events(api, world, f"?after={page['next_after']}&limit=3")
    assert [e["sequence"] for e in rest["events"]] == [6, 7]
    assert rest["next_after"] == 7


@pytest.mark.parametrize("after", [3, 4, 50])
def test_after_at_or_beyond_head_is_an_empty_page(api: APIClient, world: World, after: int) -> None:
    """wire§4: after ≥ head gives an empty page; next_after is then N itself."""
    page = events(api, world, f"?after={after}")
    assert page == {"events": [], "head": 3, "next_after": after}


def test_limit_defaults_to_100_and_is_clamped_to_1000(api: APIClient, world: World) -> None:
    """wire§4: limit default 100; larger values are clamped to 1000."""
    add_missions(api, world, 1000)  # head 1003
    default = events(api, world)
    assert len(default["events"]) == 100
    assert default["next_after"] == 100
    clamped = events(api, world, "?limit=5000")
    assert len(clamped["events"]) == 1000
    assert [e["sequence"] for e in clamped["events"]] == list(range(1, 1001))
    assert clamped["next_after"] == 1000
    assert clamped["head"] == 1003
    tail = events(api, world, "?after=1000&limit=1000")
    assert [e["sequence"] for e in tail["events"]] == [1001, 1002, 1003]


def test_empty_log_has_head_0(api: APIClient, world: World) -> None:
    """wire§4: the head of an empty log is 0 (a member's own grant is an event, so REST never
    shows an empty log to a member: the page is checked where it is built)."""
    created = post(api, "/groups", {"id": "g-empty", "organization": world.org, "name": "E"},
                   world.alice.token)  # fmt: skip
    json_of(created, 201)
    log = GroupLog.objects.get(group_id="g-empty")
    assert (log.head_sequence, log.head_hash) == (0, ZERO_HASH)
    page = selectors.events_page("g-empty", after=0, limit=100, head=log.head_sequence)
    assert (page.documents, page.head, page.next_after) == ([], 0, 0)


@pytest.mark.parametrize(
    "query",
    ["?after=-1", "?after=abc", "?after=1.5", "?after=", "?limit=-5", "?limit=x", "?after=1e3",
     "?after=99999999999999999999"],
)  # fmt: skip
def test_bad_after_or_limit_is_malformed(api: APIClient, world: World, query: str) -> None:
    """wire§4: after and limit are non-negative integers."""
    response = get(api, f"/groups/{world.group}/events{query}", world.w1.token)
    assert error_of(response, 400, "MALFORMED")["details"]["parameter"] in ("after", "limit")


def test_events_chain_up_to_the_signed_head(api: APIClient, world: World) -> None:
    """wire§4/§6: /head is signed by the /authority key over the canonical head without the
    signature, and the hash chain of /events verifies up to it."""
    add_missions(api, world, 3)
    authority = json_of(get(api, "/authority"), 200)
    head = json_of(get(api, f"/groups/{world.group}/head", world.w1.token), 200)
    assert set(head) == {"group", "sequence", "hash", "previous", "signed_at", "signature"}
    assert head["group"] == world.group
    parse_timestamp(head["signed_at"])
    key = parse_public_key(authority["public_key"])
    message = canonical_bytes(without(head, "signature"))
    assert verify(key, message, head["signature"])
    assert not verify(key, canonical_bytes({**without(head, "signature"), "sequence": 1}),
                      head["signature"])  # fmt: skip

    page = events(api, world, "?limit=1000")
    chain = page["events"]
    assert first_chain_break(chain) is None
    assert chain[0]["prev_hash"] == ZERO_HASH
    assert chain[-1]["sequence"] == head["sequence"] == 6
    assert chain[-1]["hash"] == head["hash"]
    for event in chain:
        assert event["hash"] == event_hash(event)


def test_a_tampered_event_breaks_the_chain(api: APIClient, world: World) -> None:
    """wire§6: hash covers every served field; prev_hash links each event to the previous."""
    add_missions(api, world, 2)
    chain = events(api, world)["events"]
    chain[2] = {**chain[2], "actor": "agent:mallory"}
    assert first_chain_break(chain) == 3


def test_pages_concatenate_to_the_whole_chain(api: APIClient, world: World) -> None:
    """wire§4: following next_after page by page yields every event once, in order."""
    add_missions(api, world, 7)  # head 10
    collected: list[dict[str, Any]] = []
    after = 0
    while True:
        page = events(api, world, f"?after={after}&limit=3")
        if not page["events"]:
            break
        collected.extend(page["events"])
        after = page["next_after"]
    assert [e["sequence"] for e in collected] == list(range(1, 11))
    assert first_chain_break(collected) is None


def test_rest_events_are_the_stored_documents(api: APIClient, world: World) -> None:
    """wire§6: REST serves each event exactly as hashed (canonical JSON, hash included)."""
    document = world.w1.command(world.group, "mission.create", mission_body())
    json_of(submit(api, world.group, document, world.w1.token), 201)
    response = get(api, f"/groups/{world.group}/events?after=3", world.w1.token)
    [event] = json_of(response, 200)["events"]
    assert canonical_bytes(event) in response.content
