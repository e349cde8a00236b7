"""Who is told what (issue 36 §1; R10.2-06, R10.2-22, R11.3-02): the pure choice of
recipients, over events and WorkItem/mission states built by hand — no database."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from apps.notifications.kinds import Kind
from apps.notifications.recipients import (
    TRIGGERS,
    Facts,
    People,
    blocked_drafts,
    deadline_drafts,
    drafts_for,
    finished_words,
)
from missionweave.protocol.missions.model import Mission
from missionweave.protocol.work.items import WorkItem
from tests.work.lifecycle import contract

OLGA, OMAR, OTTO, CORA, RITA = (f"user:{n}" for n in ("olga", "omar", "otto", "cora", "rita"))
PEOPLE = People(
    {
        OLGA: frozenset({"mission_owner"}),
        OMAR: frozenset({"mission_owner"}),
        OTTO: frozenset({"mission_owner"}),
        CORA: frozenset({"coordinator"}),
        RITA: frozenset({"reviewer"}),
    }
)


def name(principal: str) -> str:
    return principal.split(":", 1)[1].title()


def item(**fields: Any) -> WorkItem:
    base = WorkItem(
        id="wi-1",
        mission="m-1",
        state="queued",
        revision=1,
        contract=contract(approvals=2, goal="Summarise the reports"),
        depends_on=(),
        authorized_by="agent:w1",
        owner="agent:w2",
    )
    return replace(base, **fields)


def mission(**fields: Any) -> Mission:
    base = Mission(
        id="m-1",
        state="active",
        goal="Know November",
        limits={},
        used={},
        parent=None,
        children=(),
        work_items=("wi-1",),
        created_by="agent:w1",
        created_sequence=1,
        link=None,
    )
    return replace(base, **fields)


def event(type_: str, actor: str = "agent:w2", sequence: int = 9, **payload: Any) -> dict:
    return {
        "event_id": f"evt_{type_}_{sequence}",
        "type": type_,
        "actor": actor,
        "sequence": sequence,
        "payload": {"work_item": "wi-1", **payload},
    }


def facts(**fields: Any) -> Facts:
    return Facts(**{"group": "g", "group_name": "Research", "people": PEOPLE, **fields})


def told(drafts: list) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for draft in drafts:
        found.setdefault(draft.kind.value, []).append(draft.principal)
    return found


def test_approval_needed_goes_to_the_mission_owners_who_may_still_grant_it() -> None:
    """R10.2-06: every human mission owner but the requester and anyone who already decided;
    agents and other roles get nothing; the link opens the approval screen."""
    waiting = item(approvals=(OTTO,), authorized_by=OLGA)
    drafts = drafts_for(event("work.offer_accepted"), facts(item=waiting), name)
    assert told(drafts) == {"approval_needed": [OMAR]}
    assert drafts[0].link == "/groups/g/work-items/wi-1/approval/"
    assert drafts[0].key == "wi-1@r1:agent:w2:1"  # asked once per state of the approval
    assert "Summarise the reports" in drafts[0].title
    assert drafts[0].body == (  # names, not principals; words, not "owner(s)"
        "W2 accepted this work; it cannot start until 2 mission owners approve it (1 so far)."
    )


def test_one_approval_needed_reads_as_one_person_not_a_count() -> None:
    """R10.2-06 with a quorum of one: "until a mission owner approves it", not "until 1
    mission owner approve it (0 so far)"."""
    single = item(contract=contract(approvals=1, goal="Summarise the reports"))
    drafts = drafts_for(event("work.offer_accepted"), facts(item=single), name)
    assert (
        drafts[0].body
        == "W2 accepted this work; it cannot start until a mission owner approves it."
    )


def test_no_approval_is_asked_once_met_refused_or_ungated() -> None:
    for settled in (
        item(approvals=(OLGA, OMAR)),
        item(refusal={"principal": OLGA}),
        item(contract=contract(approvals=0)),
        item(state="offered"),
    ):
        assert drafts_for(event("work.offer_accepted"), facts(item=settled), name) == []


def test_a_decision_tells_whoever_asked_and_falls_back_to_the_coordinators() -> None:
    """The human authoriser; else the human mission creator; else the human coordinators —
    never the person who decided."""
    granted = event("approval.execution_granted", actor=OMAR, comment="fine")
    by_person = facts(item=item(authorized_by=OLGA, approvals=(OMAR,)), mission=mission())
    assert told(decided(drafts_for(granted, by_person, name))) == {"approval_decided": [OLGA]}
    by_agent = facts(item=item(approvals=(OMAR,)), mission=mission(created_by=OTTO))
    assert told(decided(drafts_for(granted, by_agent, name))) == {"approval_decided": [OTTO]}
    nobody = facts(item=item(approvals=(OMAR,)), mission=mission())
    drafts = decided(drafts_for(granted, nobody, name))
    assert told(drafts) == {"approval_decided": [CORA]}
    assert drafts[0].title.startswith("Omar approved")
    assert "1 of 2" in drafts[0].body
    refused = event("approval.execution_refused", actor=CORA, comment="no")
    assert drafts_for(refused, nobody, name) == []  # the decider is not told of their own


def decided(drafts: list) -> list:
    return [d for d in drafts if d.kind is Kind.APPROVAL_DECIDED]


def test_a_grant_short_of_the_quorum_tells_who_may_still_approve() -> None:
    """R10.2-06, issue 36 "Must hold": Olga approves one of two; Omar and Otto, who may still
    approve, are told it now waits for them (the approval page); Olga is not; once the quorum
    is met nobody is."""
    granted = event("approval.execution_granted", actor=OLGA, sequence=12)
    one_of_two = facts(item=item(approvals=(OLGA,)), mission=mission())
    drafts = [d for d in drafts_for(granted, one_of_two, name) if d.kind is Kind.APPROVAL_NEEDED]
    assert [d.principal for d in drafts] == [OMAR, OTTO]
    assert drafts[0].key == "wi-1@r1:agent:w2:1"  # the acceptance read now asks the same
    assert drafts[0].title == "Olga approved “Summarise the reports”: it still needs you"
    assert drafts[0].body == (
        "1 of 2 approvals given; 1 more mission owner must approve before it can start."
    )
    assert drafts[0].link == "/groups/g/work-items/wi-1/approval/"
    met = facts(item=item(approvals=(OLGA, OMAR)), mission=mission())
    assert "approval_needed" not in told(drafts_for(granted, met, name))
    refused = event("approval.execution_refused", actor=OLGA)
    assert "approval_needed" not in told(drafts_for(refused, one_of_two, name))


def test_review_waiting_goes_to_reviewers_or_else_mission_owners() -> None:
    submitted = item(state="submitted")
    assert told(drafts_for(event("work.submitted"), facts(item=submitted), name)) == {
        "review_waiting": [RITA]
    }
    without_reviewers = Facts(
        group="g",
        group_name="R",
        people=People({OLGA: frozenset({"mission_owner"})}),
        item=submitted,
    )
    drafts = drafts_for(event("work.submitted"), without_reviewers, name)
    assert told(drafts) == {"review_waiting": [OLGA]}
    assert drafts[0].link == "/groups/g/work-items/wi-1/review/"


def test_a_submission_sent_back_tells_the_mission_owners_but_not_the_judge() -> None:
    failed = item(state="failed", failed_review={"sequence": 9, "by": OLGA})
    sent = event("work.failed", actor=OLGA, reason="wrong month")
    found = told(drafts_for(sent, facts(item=failed, mission=mission()), name))
    assert found["sent_back"] == sorted([CORA, OMAR, OTTO])
    # a failure that was not a judged submission (e.g. propagated) is not "sent back"
    other = item(state="failed", failed_review=None)
    assert "sent_back" not in told(drafts_for(sent, facts(item=other, mission=mission()), name))


def test_a_mission_is_ready_once_nothing_is_unfinished() -> None:
    """R10.2-22: once per mission and number of WorkItems."""
    accepted = event("work.result_accepted", actor=OLGA)
    ready = facts(
        item=item(state="verified"),
        mission=mission(),
        mission_item_states=("verified", "cancelled"),
    )
    drafts = drafts_for(accepted, ready, name)
    assert told(drafts) == {"mission_ready": [OLGA, OMAR, OTTO]}
    assert {d.key for d in drafts} == {"m-1@2"}
    assert drafts[0].link == "/groups/g/missions/m-1/final-approval/"
    waiting = replace(ready, mission_item_states=("verified", "active"))
    assert drafts_for(accepted, waiting, name) == []
    ended = replace(ready, mission=mission(state="approved"))
    assert drafts_for(accepted, ended, name) == []


def blocked_item(**fields: Any) -> WorkItem:
    at = "2026-12-07T20:00:00.000Z"
    held = {"resolution": "access to the archive", "by": "agent:w2", "at": at}
    return item(state="blocked", blocked_at=at, blocked_for=held, **fields)


def test_blocked_work_tells_the_mission_owners_at_once_when_no_agent_coordinates() -> None:
    """R11.4-04, R11.4-06: only a person can answer it, so the owners hear of it now, in the
    worker's own words, once per block (the key names when it blocked)."""
    blocked = event("work.blocked", required_resolution="access to the archive")
    drafts = drafts_for(blocked, facts(item=blocked_item()), name)
    assert told(drafts) == {"work_blocked": [OLGA, OMAR, OTTO]}
    assert drafts[0].title == "W2 is blocked on “Summarise the reports”"
    assert drafts[0].body == "It needs: “access to the archive”"
    assert drafts[0].key == "wi-1@2026-12-07T20:00:00.000Z"


def test_a_block_an_agent_coordinator_will_answer_tells_nobody_now() -> None:
    """The agent answers it within moments; ``blocks`` tells the owners if it does not."""
    blocked = event("work.blocked", required_resolution="access to the archive")
    agents = replace(PEOPLE, agent_roles=frozenset({"coordinator", "worker"}))
    assert drafts_for(blocked, facts(item=blocked_item(), people=agents), name) == []
    agent_workers_only = replace(PEOPLE, agent_roles=frozenset({"worker"}))
    found = facts(item=blocked_item(), people=agent_workers_only)
    assert told(drafts_for(blocked, found, name)) == {"work_blocked": [OLGA, OMAR, OTTO]}


def test_a_block_answered_before_the_producer_reads_it_tells_nobody() -> None:
    blocked = event("work.blocked", required_resolution="access to the archive")
    assert drafts_for(blocked, facts(item=item(state="queued")), name) == []


def test_a_block_nobody_answered_says_how_long_it_waited_under_the_same_key() -> None:
    """The beat's draft of a block is the producer's (one key): nobody is told twice."""
    found = facts(item=blocked_item())
    later = blocked_drafts(found, name, waited_min=3)
    assert told(later) == {"work_blocked": [OLGA, OMAR, OTTO]}
    assert later[0].body == "It needs: “access to the archive” Nobody has answered it for 3 min."
    blocked = event("work.blocked", required_resolution="access to the archive")
    assert {d.key for d in later} == {d.key for d in drafts_for(blocked, found, name)}
    assert blocked_drafts(facts(item=item(state="queued")), name, waited_min=3) == []


def test_a_membership_change_tells_only_that_person() -> None:
    granted = {
        "event_id": "evt_m",
        "type": "membership.granted",
        "actor": "user:alice",
        "sequence": 3,
        "payload": {"principal": OMAR, "roles": ["mission_owner"], "epoch": 1},
    }
    drafts = drafts_for(granted, facts(), name)
    assert told(drafts) == {"membership_changed": [OMAR]}
    assert drafts[0].title == "You were added to Research as mission owner"
    agent = {**granted, "payload": {"principal": "agent:w2", "roles": ["worker"], "epoch": 1}}
    assert drafts_for(agent, facts(), name) == []


def test_the_deadline_reminder_asks_those_whose_approval_it_waits_on() -> None:
    """R11.3-02: once per item and deadline; to the owners who may approve while approval is
    missing, to every mission owner otherwise."""
    waiting = item(approvals=(OLGA,), start_deadline="2026-12-07T10:00:00Z")
    drafts = deadline_drafts(facts(item=waiting), "2026-12-07T10:00:00Z", 7, name)
    assert told(drafts) == {"deadline_near": [OMAR, OTTO]}
    assert {d.key for d in drafts} == {"wi-1@2026-12-07T10:00:00Z"}
    assert "within 7 min" in drafts[0].title
    assert "If it has not started by Dec 7, 10:00 UTC," in drafts[0].body  # words, not wire
    assert "T10:00" not in drafts[0].body
    approved = item(approvals=(OLGA, OMAR))
    assert told(deadline_drafts(facts(item=approved), "2026-12-07T10:00:00Z", 3, name)) == {
        "deadline_near": [OLGA, OMAR, OTTO]
    }


def test_every_kind_has_a_trigger_or_the_beat() -> None:
    assert {"work.offer_accepted", "work.submitted", "membership.revoked"} <= TRIGGERS
    assert {k.value for k in Kind} == {
        "approval_needed", "approval_decided", "review_waiting", "sent_back",
        "mission_ready", "deadline_near", "work_blocked", "membership_changed",
        "asked_of_you",
        "hook_disabled",  # no event: hook_delivery, when a group hook is turned off
    }  # fmt: skip
    assert "work.asked" in TRIGGERS


def test_an_ask_tells_the_people_named_and_links_the_screen_that_decides() -> None:
    """Issue 36 §4: ``work.asked`` reaches each person named (never the asker, never an
    agent), with the asker's name, what is asked, the note, and the approval or review page."""
    ask = event(
        "work.asked", actor=OLGA, asked=[OMAR, "agent:w9", OLGA],
        note="Before noon, please", **{"for": "execution_approval"},
    )  # fmt: skip
    drafts = drafts_for(ask, facts(item=item()), name)
    assert told(drafts) == {"asked_of_you": [OMAR]}
    assert drafts[0].title == "Olga asks you for execution approval of “Summarise the reports”"
    assert drafts[0].body == "“Before noon, please”"
    assert drafts[0].link == "/groups/g/work-items/wi-1/approval/"
    review = event("work.asked", actor=OLGA, asked=[RITA], **{"for": "review"})
    [draft] = drafts_for(review, facts(item=item(state="submitted")), name)
    assert (draft.principal, draft.link) == (RITA, "/groups/g/work-items/wi-1/review/")


def test_changes_asked_at_the_final_approval_tell_the_human_coordinators() -> None:
    """Issue 36 §5 (R13.2-03, R10.2-21): ``mission.changes_requested`` is a ``sent_back`` for
    the group's human coordinators — who replace the items — with the items, the note and the
    mission page; never the asker, never the mission owners (they asked)."""
    asked = event("mission.changes_requested", actor=OLGA, mission="m-1",
                  work_items=["wi-1", "wi-2"], note="Add March")  # fmt: skip
    del asked["payload"]["work_item"]
    drafts = drafts_for(asked, facts(mission=mission()), name)
    assert told(drafts) == {"sent_back": [CORA]}
    (draft,) = drafts
    assert draft.title == "Olga asks for changes in “Know November”"
    assert draft.body == "To replace: wi-1, wi-2. “Add March”"
    assert (draft.subject_type, draft.subject_id) == ("mission", "m-1")
    assert draft.link == "/groups/g/missions/m-1/"
    assert "mission.changes_requested" in TRIGGERS
    assert drafts_for(asked, facts(), name) == []  # no mission found: nobody told


def _criteria(*methods: str) -> dict[str, Any]:
    criteria = [
        {"id": f"c{n}", "description": "d", "method": method, "evidence": ["review"]}
        for n, method in enumerate(methods, 1)
    ]
    return {**contract(), "acceptance_criteria": criteria}


@pytest.mark.parametrize(
    ("methods", "agent_roles", "told_rita"),
    [
        # a person must judge: always told, whoever the agents are
        (("deterministic", "human_review"), {"coordinator", "reviewer"}, True),
        (("human_review",), set(), True),
        # agents carry it: an agent coordinator accepts, an agent reviewer reviews
        (("deterministic",), {"coordinator"}, False),
        (("deterministic", "agent_review"), {"coordinator", "reviewer"}, False),
        # no agent reviewer for the agent_review criterion: a person must review it
        (("deterministic", "agent_review"), {"coordinator"}, True),
        # no agent coordinator: a person accepts the result
        (("deterministic",), {"reviewer"}, True),
        (("deterministic", "agent_review"), set(), True),
    ],
)
def test_review_waiting_only_when_a_person_must_act(
    methods: tuple[str, ...], agent_roles: set[str], told_rita: bool
) -> None:
    """A submission that agents judge and accept within moments tells nobody (a person
    reads it at the final approval); one with a human_review criterion, or that no agent
    can carry, tells the reviewers."""
    submitted = item(state="submitted", contract=_criteria(*methods))
    people = People(PEOPLE.roles, agent_roles=frozenset(agent_roles))
    drafts = drafts_for(
        event("work.submitted"), replace(facts(item=submitted), people=people), name
    )
    assert told(drafts) == ({"review_waiting": [RITA]} if told_rita else {})


def test_a_ready_missions_work_is_counted_as_people_say_it() -> None:
    """No "All 1 WorkItems are finished (1 verified).": the count agrees with its noun."""
    assert finished_words(1, 1) == "Its WorkItem is finished and verified."
    assert finished_words(1, 0) == "Its WorkItem is finished but not verified."
    assert finished_words(2, 2) == "Both WorkItems are finished and verified."
    assert finished_words(2, 1) == "Both WorkItems are finished; 1 of them verified."
    assert finished_words(3, 1) == "All 3 WorkItems are finished; 1 of them verified."
