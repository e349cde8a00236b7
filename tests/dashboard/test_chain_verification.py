"""The dashboard's chain check on documents: the log table refuses UPDATE, so tampering is
simulated on copies of real events, and the page partials are rendered from such a page.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace
from typing import Any

import pytest
from django.template.loader import render_to_string

from apps.dashboard import timeline_reads
from apps.dashboard.timeline import check_page, event_family
from apps.dashboard.timeline_links import LinkedPage, check_linked
from apps.ledger.models import Event, GroupLog
from apps.ledger.write_path import submit_command
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import event_hash
from tests.dashboard.conftest import Dashboard, logged_in
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


def test_the_timeline_shows_a_tampered_chain_as_broken(documents: list[dict]) -> None:
    """wire§6: the Timeline's banner names the first bad sequence and the line is marked."""
    tampered = copy.deepcopy(documents)
    tampered[4]["payload"]["budgets"] = {"money": 1e9}
    linked = check_linked(tampered, {})
    page = _timeline_page(linked, head_matches=True)
    banner = render_to_string("dashboard/timeline/chain.html", {"page": page})
    assert "✗ Chain broken at #5" in banner
    assert 'data-verified="false"' in banner
    broken = next(event for event in linked.events if event.sequence == 5)
    line = render_to_string(
        "dashboard/timeline/line.html",
        {"line": SimpleNamespace(checked=broken, words="", said="", kind="mission", json="{}")},
    )
    assert "tl-line--broken" in line
    assert 'data-verdict="hash-mismatch"' in line


def test_the_timeline_says_when_the_head_row_disagrees(
    dash: Dashboard, documents: list[dict]
) -> None:
    """wire§4 head: the event at the head row's sequence must carry the head row's hash, or
    the newest events were cut or rewritten under it: the Timeline says so and is not
    verified, whichever page is open."""
    client = logged_in(dash.maria)
    group = dash.world.group
    assert 'data-verified="true"' in client.get(f"/groups/{group}/timeline/").content.decode()
    GroupLog.objects.filter(group_id=group).update(head_hash="sha256:" + "f" * 64)
    for address in (f"/groups/{group}/timeline/", f"/groups/{group}/timeline/?before=3"):
        html = client.get(address).content.decode()
        assert "The newest events do not match the log" in html
        assert 'data-verified="false"' in html


def _timeline_page(linked: LinkedPage, *, head_matches: bool) -> timeline_reads.Page:
    lines = tuple(
        SimpleNamespace(checked=event, words="", said="", kind="", json="{}")
        for event in linked.events
    )
    return timeline_reads.Page(
        lines=lines,  # type: ignore[arg-type]
        linked=linked,
        head_sequence=linked.events[0].sequence,
        searched=None,
        older_before=None,
        newer_after=None,
        scan_bounded=False,
        head_matches=head_matches,
    )


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
