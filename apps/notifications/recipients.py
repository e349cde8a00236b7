"""Who is told what, for which event (issue 36 §1): pure functions over one event and the
projection state read for it (``facts``), returning drafts of notifications.

Only people get notifications: principals ``user:<name>`` (wire.md §2); agents never do. The
state read is the projection as it is when the producer runs (moments after the commit, or at
the beat's catch-up), so a notification about something already settled is not made: an
approval already given by enough people asks nobody, a mission no longer ready is not offered
for final approval.

Recipients, by kind (docs/dashboard.md, "What people are told"):

=================  ==================================================================
approval_needed    the mission owners who may still grant it (R10.2-06): every human
                   mission_owner but the item's requester (authoriser, proposer), its
                   owner, and those who already decided this revision; once when the
                   work is accepted, again after each grant that leaves it short
approval_decided   whoever asked for the work: its human authoriser or proposer; else
                   the human who created the mission; else the group's human
                   coordinators (never the person who decided)
review_waiting     the group's human reviewers; with none, its human mission owners —
                   only when a person must act (``waits_for_a_person``): a human_review
                   criterion, or no agent coordinator (or reviewer) to judge it
sent_back          whoever asked for the work (as above) and the human mission owners,
                   but not the person who sent it back; for ``mission.changes_requested``
                   (issue 36 §5), the group's human coordinators, who replace the items
mission_ready      the group's human mission owners (R10.2-22: nothing unfinished)
deadline_near      (``deadlines``) the mission owners who may still approve, when the
                   item waits for approval; otherwise the human mission owners
work_blocked       the group's human mission owners: at once when no agent coordinates
                   the group; otherwise (``blocks``) only once the block has waited
                   ``MWP_NOTIFY_BLOCK_GRACE_S`` without the coordinator's answer
membership_changed the person whose membership changed
asked_of_you       the people named by ``work.ask`` (issue 36 §4), never the asker
=================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.missions.model import Mission
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import WorkItem

from .kinds import Kind

#: principal → the name a person reads
Namer = Callable[[str], str]

#: the screens a WorkItem's notification may open besides its own page, as its link ends:
#: an ``asked_of_you`` asks for whichever its link opens (``standing``, ``answered``)
APPROVAL_PAGE = "approval/"
REVIEW_PAGE = "review/"

MISSION_OWNER = "mission_owner"
REVIEWER = "reviewer"
COORDINATOR = "coordinator"

APPROVAL_NEEDED_EVENTS = frozenset({"work.offer_accepted"})
DECISION_EVENTS = frozenset({"approval.execution_granted", "approval.execution_refused"})
#: events after which a mission may have nothing unfinished left
FINISHING_EVENTS = frozenset(
    {"work.result_accepted", "work.failed", "work.cancelled", "mission.child_approved"}
)
MEMBERSHIP_EVENTS = frozenset({"membership.granted", "membership.changed", "membership.revoked"})
#: every event type the producer reads; the others are passed over
TRIGGERS = frozenset(
    {
        *APPROVAL_NEEDED_EVENTS,
        *DECISION_EVENTS,
        *FINISHING_EVENTS,
        *MEMBERSHIP_EVENTS,
        "work.submitted",
        "work.blocked",
        "work.asked",
        "mission.changes_requested",
    }
)


def is_person(principal: str | None) -> bool:
    return bool(principal) and str(principal).startswith("user:")


@dataclass(frozen=True)
class People:
    """A group's active human members and their roles."""

    roles: dict[str, frozenset[str]]
    #: every role some active agent of the group holds
    agent_roles: frozenset[str] = frozenset()

    def with_role(self, role: str) -> list[str]:
        return sorted(p for p, roles in self.roles.items() if role in roles)


@dataclass(frozen=True)
class Draft:
    """A notification before it has a row: to whom, of which kind, unique by ``key``."""

    principal: str
    kind: Kind
    key: str
    subject_type: str
    subject_id: str
    title: str
    body: str
    link: str


@dataclass(frozen=True)
class Facts:
    """What the drafts of one event read: the group's people, and the event's WorkItem and
    mission as the projection holds them now (``None`` when the event names none)."""

    group: str
    group_name: str
    people: People
    item: WorkItem | None = None
    mission: Mission | None = None
    #: the states of the mission's WorkItems
    mission_item_states: tuple[str, ...] = ()


# --- links --------------------------------------------------------------------------------


def item_link(group: str, work_item: str, screen: str = "") -> str:
    return f"/groups/{group}/work-items/{work_item}/{screen}"


def final_approval_link(group: str, mission: str) -> str:
    return f"/groups/{group}/missions/{mission}/final-approval/"


# --- who -----------------------------------------------------------------------------------


def requesters(item: WorkItem, mission: Mission | None, people: People) -> list[str]:
    """Whoever asked for the work: its human authoriser or proposer; else the human who
    created its mission; else the group's human coordinators."""
    asked = [p for p in (item.authorized_by, item.proposed_by) if is_person(p)]
    if not asked and mission is not None and is_person(mission.created_by):
        asked = [mission.created_by]
    if not asked:
        asked = people.with_role(COORDINATOR)
    return sorted(set(asked))


def waiting_for_approval(item: WorkItem) -> bool:
    """Gated, queued, not refused, and short of its quorum (R10.2-06)."""
    needed = approvals_required(item)
    return (
        needed > 0
        and item.state == S.QUEUED
        and item.refusal is None
        and len(item.approvals) < needed
    )


def may_still_approve(item: WorkItem, people: People) -> list[str]:
    """The human mission owners who may still grant the current revision (not the
    requester, the owner, or anyone who already decided it)."""
    excluded = {item.authorized_by, item.proposed_by, item.owner, *item.approvals}
    return [p for p in people.with_role(MISSION_OWNER) if p not in excluded]


def _without(principals: Iterable[str], *excluded: str | None) -> list[str]:
    return sorted({p for p in principals if is_person(p) and p not in excluded})


# --- drafts per event ------------------------------------------------------------------------


def _item_title(item: WorkItem) -> str:
    return str(item.contract.get("goal") or item.id)


def mission_owners(count: int, *, with_count: bool = True) -> str:
    """``2 mission owners``, ``1 mission owner``: the words an email and a chat message read,
    never ``owner(s)``."""
    words = "mission owner" if count == 1 else "mission owners"
    return f"{count} {words}" if with_count else words


def _drafts(principals: Iterable[str], kind: Kind, key: str, **fields: Any) -> list[Draft]:
    return [Draft(principal=p, kind=kind, key=key, **fields) for p in sorted(set(principals))]


def asked_to_approve_key(item: WorkItem) -> str:
    """One "approve this" per item, revision, worker and number of approvals given: the
    acceptance and a grant read in the same run (the same state) ask once; a grant that
    leaves the quorum short, a new revision or a new worker asks again."""
    return f"{item.id}@r{item.revision}:{item.owner or ''}:{len(item.approvals)}"


def approval_round(key: str) -> str:
    """The revision and worker an ``asked_to_approve_key`` asks about, without the number of
    approvals given: a grant short of the quorum asks again in the same round (news that it
    still needs you); a new revision or worker starts a new one."""
    return key.rsplit(":", 1)[0]


def approval_needed(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    item = facts.item
    if item is None or not waiting_for_approval(item):
        return []
    needed = approvals_required(item)
    until = (
        "a mission owner approves it"
        if needed == 1
        else f"{mission_owners(needed)} approve it ({len(item.approvals)} so far)"
    )
    body = f"{name(item.owner or '')} accepted this work; it cannot start until {until}."
    return _drafts(
        may_still_approve(item, facts.people),
        Kind.APPROVAL_NEEDED,
        asked_to_approve_key(item),
        subject_type="work_item",
        subject_id=item.id,
        title=f"Approve the execution of “{_item_title(item)}”",
        body=body,
        link=item_link(facts.group, item.id, APPROVAL_PAGE),
    )


def approval_decided(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    item = facts.item
    if item is None:
        return []
    granted = event["type"] == "approval.execution_granted"
    verb = "approved" if granted else "refused"
    comment = str(event["payload"].get("comment") or "")
    body = f"“{comment}”" if comment else ""
    if granted:
        count = f"{len(item.approvals)} of {approvals_required(item)} approvals given."
        body = f"{body} {count}".strip()
    return _drafts(
        _without(requesters(item, facts.mission, facts.people), event["actor"]),
        Kind.APPROVAL_DECIDED,
        event["event_id"],
        subject_type="work_item",
        subject_id=item.id,
        title=f"{name(event['actor'])} {verb} the execution of “{_item_title(item)}”",
        body=body,
        link=item_link(facts.group, item.id, APPROVAL_PAGE),
    )


def still_needed(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    """A grant that leaves the quorum short (R10.2-06): the mission owners who may still
    grant it are told again, with who approved and how many are missing, so a second
    approver whose inbox is closed learns that the work now waits for them."""
    item = facts.item
    if item is None or not waiting_for_approval(item):
        return []
    needed = approvals_required(item)
    missing = needed - len(item.approvals)
    return _drafts(
        _without(may_still_approve(item, facts.people), event["actor"]),
        Kind.APPROVAL_NEEDED,
        asked_to_approve_key(item),
        subject_type="work_item",
        subject_id=item.id,
        title=f"{name(event['actor'])} approved “{_item_title(item)}”: it still needs you",
        body=(
            f"{len(item.approvals)} of {needed} approvals given; {missing} more "
            f"{mission_owners(missing, with_count=False)} must approve before it can start."
        ),
        link=item_link(facts.group, item.id, APPROVAL_PAGE),
    )


def waits_for_a_person(item: WorkItem, people: People) -> bool:
    """Whether a person must act for this submission to be judged: a ``human_review``
    criterion (only a human mission owner accepts it, R13.2-03), or no agent to carry it —
    an agent coordinator accepts the result, and an ``agent_review`` criterion needs an
    agent reviewer. Otherwise agents judge it within moments and a person reads it at the
    final approval: telling the reviewers of every such submission only buries the ones
    that wait for them."""
    methods = {c.get("method") for c in item.contract.get("acceptance_criteria", ())}
    if "human_review" in methods:
        return True
    agents_review = "agent_review" not in methods or REVIEWER in people.agent_roles
    return not (COORDINATOR in people.agent_roles and agents_review)


def review_waiting(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    item = facts.item
    if item is None or item.state != S.SUBMITTED or not waits_for_a_person(item, facts.people):
        return []
    reviewers = facts.people.with_role(REVIEWER) or facts.people.with_role(MISSION_OWNER)
    return _drafts(
        _without(reviewers, event["actor"]),
        Kind.REVIEW_WAITING,
        event["event_id"],
        subject_type="work_item",
        subject_id=item.id,
        title=f"Review “{_item_title(item)}”",
        body=f"{name(event['actor'])} submitted it for review.",
        link=item_link(facts.group, item.id, REVIEW_PAGE),
    )


def sent_back(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    item = facts.item
    judged = item.failed_review if item is not None else None
    if item is None or not judged or judged.get("sequence") != event["sequence"]:
        return []
    who = [*requesters(item, facts.mission, facts.people), *facts.people.with_role(MISSION_OWNER)]
    reason = str(event["payload"].get("reason") or "")
    return _drafts(
        _without(who, event["actor"]),
        Kind.SENT_BACK,
        event["event_id"],
        subject_type="work_item",
        subject_id=item.id,
        title=f"{name(event['actor'])} sent back “{_item_title(item)}”",
        body=f"“{reason}”" if reason else "",
        link=item_link(facts.group, item.id),
    )


def changes_requested(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    """``mission.changes_requested`` (issue 36 §5): the group's human coordinators, who carry
    the work on with replacements, told which items, the note, and the mission page."""
    mission = facts.mission
    if mission is None:
        return []
    payload = event["payload"]
    items = ", ".join(str(item) for item in payload.get("work_items", ()))
    return _drafts(
        _without(facts.people.with_role(COORDINATOR), event["actor"]),
        Kind.SENT_BACK,
        event["event_id"],
        subject_type="mission",
        subject_id=mission.id,
        title=f"{name(event['actor'])} asks for changes in “{mission.goal}”",
        body=f"To replace: {items}. “{payload.get('note', '')}”",
        link=f"/groups/{facts.group}/missions/{mission.id}/",
    )


def finished_words(count: int, verified: int) -> str:
    """What a ready mission's work came to, the count agreeing with its noun (the body
    said "All 1 WorkItems are finished (1 verified).")."""
    if count == 1:
        verdict = "and verified" if verified else "but not verified"
        return f"Its WorkItem is finished {verdict}."
    every = "Both" if count == 2 else f"All {count:,}"
    if verified == count:
        return f"{every} WorkItems are finished and verified."
    return f"{every} WorkItems are finished; {verified:,} of them verified."


def mission_ready(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    """Once per mission and number of WorkItems: the mission is ready again only when more
    work was added and finished (R10.2-22)."""
    mission, states = facts.mission, facts.mission_item_states
    if mission is None or mission.state != "active" or not states:
        return []
    if any(state in S.UNFINISHED for state in states):
        return []
    verified = sum(state == S.VERIFIED for state in states)
    return _drafts(
        facts.people.with_role(MISSION_OWNER),
        Kind.MISSION_READY,
        f"{mission.id}@{len(states)}",
        subject_type="mission",
        subject_id=mission.id,
        title=f"“{mission.goal}” is ready for final approval",
        body=finished_words(len(states), verified),
        link=final_approval_link(facts.group, mission.id),
    )


def work_blocked(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    """A block the group's agent coordinator will answer (R11.4-06; the demo's does within
    20 s) tells nobody now: ``blocks`` tells the mission owners if it is still unanswered
    after the grace time. With no agent coordinating, only a person can answer it: at once.
    A block already answered when the producer reads it tells nobody."""
    item = facts.item
    if item is None or item.state != S.BLOCKED or COORDINATOR in facts.people.agent_roles:
        return []
    return blocked_drafts(facts, name)


def blocked_drafts(facts: Facts, name: Namer, *, waited_min: int = 0) -> list[Draft]:
    """The mission owners told that ``facts.item`` is blocked, once per block (its key names
    the moment it blocked, so the producer's and the beat's drafts of one block are one)."""
    item = facts.item
    if item is None or item.state != S.BLOCKED:
        return []
    held = item.blocked_for or {}
    resolution = str(held.get("resolution") or "")
    body = f"It needs: “{resolution}”" if resolution else ""  # its own words, quoted
    if waited_min:
        body = f"{body} Nobody has answered it for {waited_min} min.".strip()
    blocker = name(str(held.get("by") or item.owner or ""))
    return _drafts(
        facts.people.with_role(MISSION_OWNER),
        Kind.WORK_BLOCKED,
        f"{item.id}@{item.blocked_at or held.get('at', '')}",
        subject_type="work_item",
        subject_id=item.id,
        title=f"{blocker} is blocked on “{_item_title(item)}”",
        body=body,
        link=item_link(facts.group, item.id),
    )


def asked_of_you(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    """``work.asked``: each person named, told who asks for what, with the asker's note and
    a link to the screen that decides it (the approval page or the review page)."""
    item = facts.item
    if item is None:
        return []
    payload = event["payload"]
    review = payload.get("for") == "review"
    wanted = "a review of" if review else "execution approval of"
    note = str(payload.get("note") or "")
    asked = [p for p in payload.get("asked", ()) if is_person(p) and p != event["actor"]]
    return _drafts(
        asked,
        Kind.ASKED_OF_YOU,
        event["event_id"],
        subject_type="work_item",
        subject_id=item.id,
        title=f"{name(event['actor'])} asks you for {wanted} “{_item_title(item)}”",
        body=f"“{note}”" if note else "",
        link=item_link(facts.group, item.id, REVIEW_PAGE if review else APPROVAL_PAGE),
    )


def membership_changed(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    payload = event["payload"]
    principal = str(payload.get("principal") or "")
    if not is_person(principal):
        return []
    roles = ", ".join(str(role).replace("_", " ") for role in payload.get("roles", ()))
    titles = {
        "membership.granted": f"You were added to {facts.group_name} as {roles}",
        "membership.changed": f"Your roles in {facts.group_name} are now: {roles}",
        "membership.revoked": f"You were removed from {facts.group_name}",
    }
    return _drafts(
        [principal],
        Kind.MEMBERSHIP_CHANGED,
        event["event_id"],
        subject_type="",
        subject_id="",
        title=titles[event["type"]],
        body=f"By {name(event['actor'])}.",
        link=f"/groups/{facts.group}/",
    )


def drafts_for(event: dict[str, Any], facts: Facts, name: Namer) -> list[Draft]:
    """Every notification ``event`` makes, given the state read for it."""
    kind = event["type"]
    drafts: list[Draft] = []
    if kind in APPROVAL_NEEDED_EVENTS:
        drafts += approval_needed(event, facts, name)
    if kind in DECISION_EVENTS:
        drafts += approval_decided(event, facts, name)
    if kind == "approval.execution_granted":
        drafts += still_needed(event, facts, name)
    if kind == "work.submitted":
        drafts += review_waiting(event, facts, name)
    if kind == "work.failed":
        drafts += sent_back(event, facts, name)
    if kind == "mission.changes_requested":
        drafts += changes_requested(event, facts, name)
    if kind in FINISHING_EVENTS:
        drafts += mission_ready(event, facts, name)
    if kind == "work.blocked":
        drafts += work_blocked(event, facts, name)
    if kind in MEMBERSHIP_EVENTS:
        drafts += membership_changed(event, facts, name)
    if kind == "work.asked":
        drafts += asked_of_you(event, facts, name)
    return drafts


def clock_words(timestamp: str) -> str:
    """A wire timestamp as people read it in a sentence, ``Dec 7, 03:24 UTC`` (the stored
    text is read in an email as well as on a page, so it names its zone)."""
    moment = parse_timestamp(timestamp)
    return f"{moment:%b} {moment.day}, {moment:%H:%M} UTC"


def deadline_drafts(facts: Facts, deadline: str, minutes_left: int, name: Namer) -> list[Draft]:
    """The start-by reminder of ``facts.item`` (``deadlines``): once per item and deadline."""
    by = clock_words(deadline)
    item = facts.item
    if item is None:
        return []
    waiting = waiting_for_approval(item)
    if waiting:
        who = may_still_approve(item, facts.people)
        body = (
            f"It still waits for execution approval ({len(item.approvals)} of "
            f"{approvals_required(item)}). If it has not started by {by}, it is "
            "taken from its worker and offered again."
        )
    else:
        who = facts.people.with_role(MISSION_OWNER)
        body = (
            f"{name(item.owner or '')} has not started it. If it has not started by "
            f"{by}, it is taken from its worker and offered again."
        )
    return _drafts(
        who,
        Kind.DEADLINE_NEAR,
        f"{item.id}@{deadline}",
        subject_type="work_item",
        subject_id=item.id,
        title=f"“{_item_title(item)}” must start within {minutes_left} min",
        body=body,
        link=item_link(facts.group, item.id, APPROVAL_PAGE if waiting else ""),
    )
