"""The dashboard's chain check on documents: the log table refuses UPDATE, so tampering is
simulated on copies of real events, and the page partials are rendered from such a page.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.template.loader import render_to_string

from apps.dashboard.selectors import TimelinePage
from apps.dashboard.timeline import check_page, event_family
from apps.ledger.models import Event
from apps.ledger.write_path import submit_command
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import event_hash
from tests.factories import World, mission_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def documents(world: World) -> list[dict[str, Any]]:
    """Six real events of g-research, oldest first (3 grants + 3 missions)."""
    for _ in range(3):
        submit_command(
            group_id=world.group,
            document=world.w1.command(world.group, "mission.create", mission_body()),
            caller=world.w1.caller,
        )
    texts = Event.objects.filter(group_id=world.group).order_by("sequence")
    return [json.loads(text) for text in texts.values_list("document", flat=True)]


def verdicts(page: Any) -> dict[int, str]:
    return {event.sequence: event.verdict for event in page.events}


def test_an_untouched_log_verifies_from_the_zero_hash(documents: list[dict]) -> None:
    """wire§6: the first prev_hash is 64 zeros; every hash is the digest of the canonical
    event without ``hash``; every prev_hash is the previous hash."""
    page = check_page(documents, anchor_sequence=0, anchor_hash=ZERO_HASH)
    assert page.verified
    assert page.first_break is None
    assert set(verdicts(page).values()) == {"verified"}
    assert [event.sequence for event in page.events] == [6, 5, 4, 3, 2, 1]  # newest first


def test_a_changed_payload_is_a_hash_mismatch_at_that_event(documents: list[dict]) -> None:
    """wire§6: the hash covers the payload, so editing it breaks that event's own hash; the
    next event still links to the hash that was stored."""
    tampered = copy.deepcopy(documents)
    tampered[3]["payload"]["goal"] = "something else"
    page = check_page(tampered, anchor_sequence=0, anchor_hash=ZERO_HASH)
    assert page.first_break == 4
    assert verdicts(page) == {1: "verified", 2: "verified", 3: "verified",
                              4: "hash-mismatch", 5: "verified", 6: "verified"}  # fmt: skip


def test_a_rewritten_event_with_a_fresh_hash_breaks_the_next_link(documents: list[dict]) -> None:
    """wire§6: re-hashing a rewritten event does not help: its successor's prev_hash no
    longer matches, so the break shows at the successor."""
    tampered = copy.deepcopy(documents)
    tampered[2]["actor"] = "user:mallory"
    tampered[2]["hash"] = event_hash(tampered[2])
    page = check_page(tampered, anchor_sequence=0, anchor_hash=ZERO_HASH)
    assert page.first_break == 4
    assert verdicts(page)[3] == "verified"
    assert verdicts(page)[4] == "broken-link"


def test_a_missing_event_is_a_broken_link(documents: list[dict]) -> None:
    """wire§6: sequences have no gaps; a removed event breaks the chain where it was."""
    page = check_page(documents[:2] + documents[3:], anchor_sequence=0, anchor_hash=ZERO_HASH)
    assert page.first_break == 4
    assert verdicts(page)[4] == "broken-link"


def test_a_page_is_checked_against_the_event_before_it(documents: list[dict]) -> None:
    """wire§6: a later page links to the hash of the event just older than the page."""
    good = check_page(documents[3:], anchor_sequence=3, anchor_hash=documents[2]["hash"])
    assert good.verified
    wrong = check_page(documents[3:], anchor_sequence=3, anchor_hash=documents[1]["hash"])
    assert wrong.first_break == 4
    assert verdicts(wrong)[4] == "broken-link"


def test_without_its_predecessor_a_page_says_it_is_not_anchored(documents: list[dict]) -> None:
    """wire§4 archive: when the event before a page is no longer online, the oldest event's
    prev_hash is taken as given and the page says so instead of claiming a full link."""
    page = check_page(documents[3:], anchor_sequence=3, anchor_hash=None)
    assert page.verified
    assert not page.anchored
    assert page.anchor_hash == documents[3]["prev_hash"]


def test_the_page_shows_a_tampered_chain_as_broken(documents: list[dict]) -> None:
    """wire§6: the page banner names the first bad sequence and the event is marked."""
    tampered = copy.deepcopy(documents)
    tampered[4]["payload"]["budgets"] = {"money": 1e9}
    checked = check_page(tampered, anchor_sequence=0, anchor_hash=ZERO_HASH)
    page = TimelinePage(checked, 6, documents[-1]["hash"], before=7, page_size=50)
    banner = render_to_string("dashboard/partials/chain-status.html", {"page": page})
    assert "✗ Chain broken at #5" in banner
    assert 'data-first-break="5"' in banner
    assert 'data-verified="false"' in banner
    broken = next(event for event in checked.events if event.sequence == 5)
    item = render_to_string("dashboard/partials/event-item.html", {"event": broken})
    assert "event--broken" in item
    assert "✗ hash mismatch" in item


def test_the_page_says_when_the_head_row_disagrees(documents: list[dict]) -> None:
    """wire§4 head: on the newest page, the newest event's hash must be the head's hash."""
    checked = check_page(documents, anchor_sequence=0, anchor_hash=ZERO_HASH)
    page = TimelinePage(checked, 6, "sha256:" + "f" * 64, before=7, page_size=50)
    assert page.head_matches is False
    banner = render_to_string("dashboard/partials/chain-status.html", {"page": page})
    assert "the head row's hash differs" in banner
    assert "chain-status--broken" in banner
    assert 'data-verified="false"' in banner


@pytest.mark.parametrize(
    ("event_type", "family"),
    [
        ("mission.created", "mission"),
        ("work.offer_accepted", "work"),
        ("membership.granted", "membership"),
        ("ext.missionweaveprotocol.core.resource_usage_recorded", "ext"),
        ("something.new", "other"),
    ],
)
def test_event_types_map_to_badge_families(event_type: str, family: str) -> None:
    """wire§6 event types: the badge colour comes from the type's first segment."""
    assert event_family(event_type) == family
