"""A filtered page of the log is verified event by event against each one's predecessor in
the log (wire§6, R16-03; issue 37 §2): gaps between the events shown change nothing."""

from __future__ import annotations

from typing import Any

from apps.dashboard.timeline_links import check_linked, predecessors_needed
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import event_hash


def chain(count: int) -> list[dict[str, Any]]:
    documents, previous = [], ZERO_HASH
    for sequence in range(1, count + 1):
        document = {"sequence": sequence, "type": "work.unblocked", "prev_hash": previous,
                    "actor": "user:olga", "payload": {"work_item": f"wi-{sequence}"}}  # fmt: skip
        document["hash"] = event_hash(document)
        previous = document["hash"]
        documents.append(document)
    return documents


def test_scattered_events_are_checked_against_their_predecessors() -> None:
    log = chain(6)
    shown = [log[1], log[4], log[5]]  # #2, #5, #6
    assert predecessors_needed([2, 5, 6]) == {1, 4}
    page = check_linked(shown, {1: log[0]["hash"], 4: log[3]["hash"]})
    assert page.verified
    assert [event.sequence for event in page.events] == [6, 5, 2]


def test_a_tampered_event_and_a_broken_link_are_found() -> None:
    log = chain(6)
    tampered = dict(log[4], payload={"work_item": "wi-other"})
    page = check_linked([log[1], tampered, log[5]], {1: log[0]["hash"], 4: log[3]["hash"]})
    assert page.first_break == 5
    assert page.events[1].verdict == "hash-mismatch"
    relinked = check_linked([log[4]], {4: "sha256:" + "1" * 64})
    assert relinked.events[0].verdict == "broken-link"


def test_an_archived_predecessor_is_taken_on_trust_and_said() -> None:
    log = chain(3)
    page = check_linked([log[2]], {})
    assert page.verified
    assert page.unanchored == (3,)
