"""Every event of the log in words (issue 37 §2; docs/dashboard.md "Timeline"): one sentence
per event type the protocol registers, with names and titles, never a principal, an id where
a title exists, or the event type's own name (issue 34 §6)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from apps.dashboard import event_words
from apps.dashboard.event_words import TableLookup, describe, subjects
from missionweave.protocol import decider  # noqa: F401  (registers every evolver)
from missionweave.protocol.evolvers import REGISTRY
from tests.dashboard.plain_words import jargon_in

LOOKUP = TableLookup(
    names={
        "user:olivia": "Olivia Ortega",
        "user:rita": "Rita Reyes",
        "agent:demo-worker-1": "demo-worker-1",
        "agent:demo-coordinator": "demo-coordinator",
        "authority": "the authority",
    },
    work_items={"wi-1": "Gather the sources of the November incidents", "wi-2": "Draft it"},
    missions={"m-1": "Summarise the incident reports of November"},
    approvals={7: (1, 2)},
)

#: a payload of every shape the protocol writes, enough for each type's sentence
PAYLOAD: dict[str, Any] = {
    "work_item": "wi-1",
    "mission": "m-1",
    "worker": "agent:demo-worker-1",
    "agent": "agent:demo-worker-1",
    "principal": "user:rita",
    "reviewer": "user:rita",
    "asked": ["user:rita", "user:olivia"],
    "offers": [{"offer": "o1", "worker": "agent:demo-worker-1"}],
    "dependency": "wi-2",
    "replaced_by": "wi-2",
    "reason": "lease_expired",
    "attempt": 1,
    "usage": {"tokens": 12000},
    "goal": "Summarise the incident reports of November",
    "contract": {"goal": "Gather the sources of the November incidents"},
    "child": {"mission": "m-2", "group": "g-demo", "goal": "Read the terms"},
    "artifacts": ["sha256:" + "0" * 64],
    "work_items": ["wi-1"],
}


def registered_types() -> set[str]:
    return {e.event for e in REGISTRY.evolvers()} | set(REGISTRY.audit_only_events())


def event(type_: str, actor: str = "agent:demo-worker-1", **payload: Any) -> dict[str, Any]:
    return {"type": type_, "actor": actor, "sequence": 7, "payload": payload or dict(PAYLOAD)}


def test_every_registered_event_type_has_words_and_a_kind() -> None:
    """A new event type in the protocol fails here until it is given words (issue 37 §2)."""
    types = registered_types()
    assert len(types) > 50
    assert types - event_words.WORDS.keys() == set()
    assert types - event_words.KINDS.keys() == set()
    # and every family the filter offers is one the protocol has
    assert {event_words.family_of(t) for t in types} <= event_words.FAMILY_LABELS.keys()


@pytest.mark.parametrize("type_", sorted(registered_types()))
def test_each_sentence_uses_names_and_no_protocol_words(type_: str) -> None:
    """R16-03 (the log is readable by its members): no principal, no event type name, no
    UPPER_CASE code in the sentence, and it starts with a capital."""
    sentence = describe(event(type_), LOOKUP)
    assert sentence
    assert sentence[0].isupper() or sentence[0] in "“d", sentence
    assert type_ not in sentence
    assert not list(jargon_in(f"<p>{sentence}</p>")), sentence
    assert "agent:" not in sentence
    assert "user:" not in sentence


def test_the_examples_of_the_issue() -> None:
    title = "“Gather the sources of the November incidents”"
    assert (
        describe(event("work.started", attempt=1, work_item="wi-1"), LOOKUP)
        == f"demo-worker-1 started {title} (attempt 1)"
    )
    assert (
        describe(event("approval.execution_granted", "user:olivia", work_item="wi-1"), LOOKUP)
        == f"Olivia Ortega approved the execution of {title} (1 of 2)"
    )
    assert (
        describe(
            event("work.reassigned", "authority", work_item="wi-1", reason="lease_expired"),
            LOOKUP,
        )
        == f"The authority reassigned {title}: its lease expired"
    )
    assert (
        describe(
            event(
                "review.requested", "agent:demo-coordinator", work_item="wi-1", reviewer="user:rita"
            ),
            LOOKUP,
        )
        == f"demo-coordinator asked Rita Reyes for a review of {title}"
    )


def test_a_child_mission_is_named_by_its_goal_and_never_by_a_bare_id() -> None:
    """Only ``mission.child_created`` carries the child's goal; the later child events carry
    its id, which a person cannot read: they say "the child mission" of the WorkItem."""
    usage = event(
        "mission.child_usage_recorded",
        work_item="wi-1",
        child={"mission": "mx-5b88e125066f-lab", "group": "g-demo-lab"},
        usage={"tokens": 1500},
    )
    sentence = describe(usage, LOOKUP)
    assert sentence.startswith("The child mission of “Gather the sources of the November")
    assert "mx-5b88e125066f-lab" not in sentence
    created = describe(event("mission.child_created", "agent:demo-coordinator"), LOOKUP)
    assert "started the child mission “Read the terms” for" in created


def test_on_a_workitems_own_page_it_is_this_workitem_not_its_goal_again() -> None:
    """The WorkItem page's History lists its own events: its goal is the page's title, so
    each line says "this WorkItem" (a sentence it opens starts with a capital)."""
    here = replace(LOOKUP, here="wi-1")
    usage = event(
        "mission.child_usage_recorded",
        work_item="wi-1",
        child={"mission": "mx-5b88e125066f-lab", "group": "g-demo-lab"},
        usage={"tokens": 1500},
    )
    assert describe(usage, here).startswith("The child mission of this WorkItem used 1,500 tokens")
    replaced = describe(event("work.replaced", work_item="wi-1", replaced_by="wi-2"), here)
    assert replaced.startswith("This WorkItem was replaced by “Draft it”")
    other = describe(event("work.replaced", work_item="wi-2", replaced_by="wi-1"), here)
    assert other.startswith("“Draft it” was replaced by this WorkItem")


def test_unknown_names_and_ids_fall_back_without_prefixes() -> None:
    sentence = describe(event("work.offer_accepted", "agent:w9", work_item="wi-x"), TableLookup())
    assert sentence == "w9 accepted WorkItem wi-x"


def test_a_payload_of_an_unexpected_shape_still_reads() -> None:
    """A malformed payload (a list where a mapping was expected) says what kind it was."""
    document = {"type": "work.offered", "actor": "user:olivia", "payload": {"offers": "oops"}}
    assert describe(document, LOOKUP).startswith("Olivia Ortega")
    assert describe({"type": "x.y", "actor": "authority"}, LOOKUP).startswith("The authority")


def test_long_titles_are_cut() -> None:
    lookup = TableLookup(work_items={"wi-1": "word " * 40})
    sentence = describe(event("work.unblocked", "user:olivia", work_item="wi-1"), lookup)
    assert "…”" in sentence
    assert len(sentence) < 120


def test_subjects_name_everyone_and_everything_mentioned() -> None:
    found = subjects([event("work.asked"), event("work.offered", "agent:demo-coordinator")])
    assert {"user:rita", "user:olivia", "agent:demo-worker-1", "agent:demo-coordinator"} <= (
        found.principals
    )
    assert found.work_items == {"wi-1", "wi-2"}
    assert found.missions == {"m-1"}


def test_filter_choices_are_words_and_stand_for_types() -> None:
    for _label, options in event_words.filter_choices():
        for value, text in options:
            assert "." not in text
            assert "_" not in text
            assert event_words.types_of(value)
    assert event_words.types_of("family:lease") == {
        "lease.expired",
        "lease.renewed",
        "lease.revoked",
    }
    assert event_words.types_of("work.nonsense") is None
    assert event_words.types_of("family:nonsense") is None


def test_what_the_author_wrote_is_quoted_apart_and_codes_are_not() -> None:
    """The sentence stays short; a comment or a free reason is shown after it, a coded
    reason (``lease_expired``) is said by the sentence, never quoted."""
    refused = event("approval.execution_refused", "user:olivia", work_item="wi-1", comment="No.")
    assert event_words.said(refused) == "No."
    assert "No." not in describe(refused, LOOKUP)
    reassigned = event("work.reassigned", "authority", work_item="wi-1", reason="lease_expired")
    assert event_words.said(reassigned) == ""
