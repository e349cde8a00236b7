"""Every event of the log as one short sentence a person reads (issue 37 §2; docs/dashboard.md
"Timeline").

"demo-worker-1 started “Gather the sources…” (attempt 1)" instead of a ``work.started`` badge
and a JSON payload: people by name, WorkItems by their goal, missions by theirs. The event
type, the raw principals and the payload stay in the page's collapsed technical details
(issue 34 §6: no protocol words in what a person reads).

Pure: the sentence comes from the wire.md §6 event document and a :class:`Lookup` that turns
principals into names and ids into titles, so it is tested without a database
(``tests/dashboard/test_event_words.py`` walks the protocol's evolver registry and fails on an
event type without words). ``event_lookup`` builds the lookup a page needs in a few queries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

#: a title longer than this is cut, with an ellipsis: a line of the timeline stays one line
TITLE_CHARS = 60


class Lookup(Protocol):
    """Names and titles for what an event mentions."""

    def name(self, principal: object) -> str: ...

    def work_item(self, work_item_id: object) -> str: ...

    def mission(self, mission_id: object) -> str: ...

    def approval_count(self, sequence: object) -> tuple[int, int] | None:
        """For an execution grant: (which grant it was, how many the revision needs)."""
        ...


def short_title(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` in curly quotes, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return f"“{text}”"


def plain_name(principal: object) -> str:
    """A principal without its ``user:``/``agent:`` prefix: what is said when no name is known."""
    text = str(principal or "")
    if text == "authority":
        return "the authority"
    return text.split(":", 1)[1] if text.startswith(("user:", "agent:")) else text or "someone"


@dataclass(frozen=True)
class TableLookup:
    """A :class:`Lookup` over plain tables (a page's names and titles, read once)."""

    names: Mapping[str, str] = field(default_factory=dict)
    work_items: Mapping[str, str] = field(default_factory=dict)  # id -> goal
    missions: Mapping[str, str] = field(default_factory=dict)  # id -> goal
    #: an execution grant's sequence -> (its rank among its revision's grants, needed)
    approvals: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    #: the WorkItem whose own page this is: there it is "this WorkItem", not its goal again
    here: str | None = None

    def name(self, principal: object) -> str:
        text = str(principal or "")
        return self.names.get(text) or plain_name(text)

    def work_item(self, work_item_id: object) -> str:
        if self.here is not None and str(work_item_id or "") == self.here:
            return "this WorkItem"
        title = self.work_items.get(str(work_item_id or ""))
        return short_title(title) if title else f"WorkItem {work_item_id or '?'}"

    def mission(self, mission_id: object) -> str:
        goal = self.missions.get(str(mission_id or ""))
        return short_title(goal) if goal else str(mission_id or "?")

    def approval_count(self, sequence: object) -> tuple[int, int] | None:
        return self.approvals.get(sequence) if isinstance(sequence, int) else None


@dataclass(frozen=True)
class Subjects:
    """What events mention, so a page looks up every name and title in one go."""

    principals: frozenset[str]
    work_items: frozenset[str]
    missions: frozenset[str]


_PRINCIPAL_KEYS = ("worker", "agent", "principal", "reviewer", "from_owner", "offered_to")


def subjects(documents: Iterable[Mapping[str, Any]]) -> Subjects:
    principals: set[str] = set()
    work_items: set[str] = set()
    missions: set[str] = set()
    for document in documents:
        principals.add(str(document.get("actor") or ""))
        payload = document.get("payload") or {}
        if not isinstance(payload, Mapping):
            continue
        principals.update(str(payload[key]) for key in _PRINCIPAL_KEYS if payload.get(key))
        principals.update(str(p) for p in payload.get("asked") or () if isinstance(p, str))
        principals.update(
            str(offer.get("worker"))
            for offer in payload.get("offers") or ()
            if isinstance(offer, Mapping) and offer.get("worker")
        )
        for key in ("work_item", "dependency", "replaced_by"):
            if isinstance(payload.get(key), str):
                work_items.add(payload[key])
        if isinstance(payload.get("mission"), str):
            missions.add(payload["mission"])
    principals.discard("")
    return Subjects(frozenset(principals), frozenset(work_items), frozenset(missions))


# --- the sentences ------------------------------------------------------------------------

Words = Callable[[str, dict[str, Any], Lookup], str]

#: why the authority took a WorkItem from its owner (``work.reassigned``, ``lease.revoked``)
REASONS = {
    "start_deadline_missed": "it was not started by its start-by deadline",
    "lease_expired": "its lease expired",
    "blocked_lease_expired": "it stayed blocked for longer than allowed",
    "membership_revoked": "its owner's membership was revoked",
    "session_replaced": "its worker started a new session",
}
#: why an offer was turned down (``work.reject_offer``'s reason)
REJECTIONS = {
    "capacity": "no capacity",
    "deadline": "the deadline",
    "capability": "missing capability",
    "authorization": "not authorised",
    "dependency": "a dependency",
    "budget": "the budget",
}


def _count(number: int, one: str, many: str | None = None) -> str:
    return f"{number:,} {one if number == 1 else (many or one + 's')}"


def _names(principals: Iterable[object], lookup: Lookup) -> str:
    names = [lookup.name(p) for p in principals]
    if len(names) <= 1:
        return "".join(names) or "nobody"
    return ", ".join(names[:-1]) + " and " + names[-1]


def _usage(usage: object) -> str:
    if not isinstance(usage, Mapping) or not usage:
        return "nothing"
    units = {
        "money": ("money ", ""),
        "tokens": ("", " tokens"),
        "tool_calls": ("", " tool calls"),
        "compute": ("", " s of compute"),
        "wall_clock": ("", " s of wall clock"),
        "side_effects": ("", " side effects"),
    }
    parts = []
    for key, value in usage.items():
        before, after = units.get(str(key), ("", f" {key}"))
        amount = f"{value:,}" if isinstance(value, int | float) else str(value)
        parts.append(f"{before}{amount}{after}")
    return ", ".join(parts)


def _verdict(evidence: object) -> str:
    if isinstance(evidence, Mapping):
        result = evidence.get("result")
        if isinstance(result, Mapping) and result.get("verdict"):
            return str(result["verdict"]).replace("_", " ")
    return "no verdict"


def _child(payload: Mapping[str, Any]) -> str:
    """The child mission by the goal its creation carried; the later events carry only its
    id (often in another group, whose goals a member here may not read, R10.4-06), which
    tells a person nothing: "the child mission" then (of the WorkItem named beside it), the
    id staying in the details."""
    child = payload.get("child")
    if isinstance(child, Mapping) and child.get("goal"):
        return f"the child mission {short_title(str(child['goal']))}"
    return "the child mission"


def _w(payload: Mapping[str, Any], lookup: Lookup) -> str:
    return lookup.work_item(payload.get("work_item"))


def _m(payload: Mapping[str, Any], lookup: Lookup) -> str:
    return lookup.mission(payload.get("mission"))


WORDS: dict[str, Words] = {
    # missions
    "mission.created": lambda who, p, lk: (
        f"{who} created the mission {short_title(str(p.get('goal') or p.get('mission') or ''))}"
        + (" as a child of another mission" if p.get("parent") else "")
    ),
    "mission.approved": lambda who, p, lk: f"{who} approved the mission {_m(p, lk)}",
    "mission.failed": lambda who, p, lk: f"{who} failed the mission {_m(p, lk)}",
    "mission.cancelled": lambda who, p, lk: f"{who} cancelled the mission {_m(p, lk)}",
    "mission.changes_requested": lambda who, p, lk: (
        f"{who} asked for changes to {_count(len(p.get('work_items') or ()), 'WorkItem')} "
        f"of the mission {_m(p, lk)}"
    ),
    "mission.child_created": lambda who, p, lk: f"{who} started {_child(p)} for {_w(p, lk)}",
    "mission.child_approved": lambda who, p, lk: (
        f"{_child(p).capitalize()} of {_w(p, lk)} was approved"
    ),
    "mission.child_failed": lambda who, p, lk: (
        f"{_child(p).capitalize()} of {_w(p, lk)} "
        f"ended {str(p.get('outcome') or 'failed').replace('_', ' ')}"
    ),
    "mission.child_cancelled": lambda who, p, lk: (
        f"{_child(p).capitalize()} of {_w(p, lk)} was cancelled"
    ),
    "mission.child_usage_recorded": lambda who, p, lk: (
        f"{_child(p).capitalize()} of {_w(p, lk)} used {_usage(p.get('usage'))}"
    ),
    # planning
    "work.proposed": lambda who, p, lk: f"{who} proposed {short_title(str(p.get('title') or ''))}",
    "work.authorized": lambda who, p, lk: (
        f"{who} authorised "
        f"{short_title(str((p.get('contract') or {}).get('goal') or p.get('work_item') or ''))} "
        f"in the mission {_m(p, lk)}"
    ),
    "work.replaced": lambda who, p, lk: (
        f"{_w(p, lk)} was replaced by {lk.work_item(p.get('replaced_by'))}"
    ),
    "work.reprioritized": lambda who, p, lk: (
        f"{who} changed the priority of {_w(p, lk)}"
        + (f" to {p['urgency']}" if p.get("urgency") else "")
    ),
    "work.message_posted": lambda who, p, lk: (
        f"{who} {'asked a question' if p.get('essential') else 'wrote'}"
        f"{' in reply' if p.get('in_reply_to') else ''} on {_w(p, lk)}"
    ),
    "work.asked": lambda who, p, lk: (
        f"{who} asked {_names(p.get('asked') or (), lk)} for "
        f"{'a review' if p.get('for') == 'review' else 'an execution approval'} of {_w(p, lk)}"
    ),
    # offers and approvals
    "work.offered": lambda who, p, lk: (
        f"{who} offered {_w(p, lk)} to "
        f"{_names([o.get('worker') for o in p.get('offers') or () if isinstance(o, Mapping)], lk)}"
    ),
    "work.offer_accepted": lambda who, p, lk: f"{who} accepted {_w(p, lk)}",
    "work.offer_rejected": lambda who, p, lk: (
        f"{who} turned down {_w(p, lk)}"
        + (f" ({REJECTIONS.get(str(p['reason']), str(p['reason']))})" if p.get("reason") else "")
    ),
    "work.offer_withdrawn": lambda who, p, lk: (
        f"The offer of {_w(p, lk)} to {lk.name(p.get('worker'))} was withdrawn"
        + (": someone else took it" if p.get("reason") == "accepted_by_another" else "")
    ),
    "approval.execution_granted": lambda who, p, lk: f"{who} approved the execution of {_w(p, lk)}",
    "approval.execution_refused": lambda who, p, lk: f"{who} refused the execution of {_w(p, lk)}",
    # execution
    "work.started": lambda who, p, lk: (
        f"{who} started {_w(p, lk)}" + (f" (attempt {p['attempt']})" if p.get("attempt") else "")
    ),
    "lease.renewed": lambda who, p, lk: f"{who} renewed its lease on {_w(p, lk)}",
    "lease.expired": lambda who, p, lk: (
        f"The lease of {lk.name(p.get('agent'))} on {_w(p, lk)} expired"
    ),
    "lease.revoked": lambda who, p, lk: (
        f"The authority revoked the lease of {lk.name(p.get('agent'))} on {_w(p, lk)}"
        + (f": {REASONS[p['reason']]}" if p.get("reason") in REASONS else "")
    ),
    "work.reassigned": lambda who, p, lk: (
        f"The authority reassigned {_w(p, lk)}"
        + (f": {REASONS[p['reason']]}" if p.get("reason") in REASONS else "")
        + (f"; offered to {lk.name(p['offered_to'])}" if p.get("offered_to") else "")
    ),
    "work.schedule_disclosed": lambda who, p, lk: f"{who} said when it expects to do {_w(p, lk)}",
    "capability.issued": lambda who, p, lk: f"The authority issued a capability for {_w(p, lk)}",
    "work.progress_reported": lambda who, p, lk: (
        f"{who} reported progress on {_w(p, lk)}"
        + (f": {short_title(str(p['phase']), 40)}" if p.get("phase") else "")
    ),
    "work.usage_recorded": lambda who, p, lk: f"{who} used {_usage(p.get('usage'))} on {_w(p, lk)}",
    "ext.missionweaveprotocol.core.resource_usage_recorded": lambda who, p, lk: (
        f"Usage {who} recorded while offline was charged to {_w(p, lk)}"
    ),
    "work.checkpointed": lambda who, p, lk: f"{who} saved a checkpoint of {_w(p, lk)}",
    "work.blocked": lambda who, p, lk: f"{who} stopped on {_w(p, lk)}",
    "work.unblocked": lambda who, p, lk: f"{who} unblocked {_w(p, lk)}",
    "artifact.published": lambda who, p, lk: (
        f"{who} published an artifact"
        + (
            f" ({p['manifest']['media_type']})"
            if isinstance(p.get("manifest"), Mapping) and p["manifest"].get("media_type")
            else ""
        )
        + (f" for {_w(p, lk)}" if p.get("work_item") else "")
    ),
    "work.submitted": lambda who, p, lk: (
        f"{who} submitted {_w(p, lk)} with {_count(len(p.get('artifacts') or ()), 'artifact')}"
    ),
    "work.late_result_recorded": lambda who, p, lk: (
        f"{who} sent a late result for {_w(p, lk)}; it was kept, not used"
    ),
    "work.retry_scheduled": lambda who, p, lk: (
        f"{_w(p, lk)} failed"
        + (f"; attempt {p['attempt']}" if p.get("attempt") else "; another attempt")
        + (f" of {p['max_attempts']}" if p.get("max_attempts") else "")
        + " is scheduled"
    ),
    # review
    "review.requested": lambda who, p, lk: (
        f"{who} asked {lk.name(p.get('reviewer'))} for a review of {_w(p, lk)}"
    ),
    "review.reserved": lambda who, p, lk: (
        f"{lk.name(p.get('reviewer') or who)} started reviewing {_w(p, lk)}"
    ),
    "review.released": lambda who, p, lk: (
        f"{who} ended the review of {_w(p, lk)} by {lk.name(p.get('reviewer'))}"
        if p.get("ended_by")
        else f"{lk.name(p.get('reviewer') or who)} stopped reviewing {_w(p, lk)}"
    ),
    "evidence.recorded": lambda who, p, lk: (
        f"{who} recorded evidence for {_w(p, lk)}: {_verdict(p)}"
        if p.get("work_item")
        else f"{who} recorded evidence: {_verdict(p)}"
    ),
    "work.result_accepted": lambda who, p, lk: f"{who} accepted the result of {_w(p, lk)}",
    "work.failed": lambda who, p, lk: (
        f"{who} failed {_w(p, lk)}"
        + ("; no attempts are left" if p.get("retries_exhausted") == "attempts" else "")
    ),
    "work.cancelled": lambda who, p, lk: f"{who} cancelled {_w(p, lk)}",
    "work.dependency_ended": lambda who, p, lk: (
        f"{_w(p, lk)} lost a dependency: {lk.work_item(p.get('dependency'))} "
        f"{p.get('outcome') or 'ended'!s}"
    ),
    "work.dependency_restored": lambda who, p, lk: (
        f"{_w(p, lk)} can go on again: {lk.work_item(p.get('dependency'))} is back"
        + (f", replaced by {lk.work_item(p['replaced_by'])}" if p.get("replaced_by") else "")
    ),
    # context, memberships, snapshots
    "context.published": lambda who, p, lk: f"{who} published a context package",
    "context.forwarded": lambda who, p, lk: f"{who} sent a context package to another group",
    "context.received": lambda who, p, lk: "A context package arrived from another group",
    "membership.granted": lambda who, p, lk: (
        f"{who} added {lk.name(p.get('principal'))} to the group"
    ),
    "membership.changed": lambda who, p, lk: (
        f"{who} changed the roles of {lk.name(p.get('principal'))}"
    ),
    "membership.revoked": lambda who, p, lk: (
        f"{who} removed {lk.name(p.get('principal'))} from the group"
    ),
    "snapshot.created": lambda who, p, lk: f"{who} took a snapshot of the group's state",
}


def describe(document: Mapping[str, Any], lookup: Lookup) -> str:
    """One sentence for the event, with names and titles, no protocol words."""
    payload = document.get("payload")
    payload = dict(payload) if isinstance(payload, Mapping) else {}
    who = lookup.name(document.get("actor"))
    words = WORDS.get(str(document.get("type", "")))
    try:
        if words is None:
            sentence = f"{who} recorded an event of a kind this page does not know yet"
        else:
            sentence = words(who, payload, lookup)
        if words is not None and document.get("type") == "approval.execution_granted":
            count = lookup.approval_count(document.get("sequence"))
            sentence += f" ({count[0]} of {count[1]})" if count else ""
    except (AttributeError, KeyError, TypeError, ValueError):
        # a payload of an unexpected shape still reads as something
        sentence = f"{who} recorded an event: {kind(document.get('type')).lower()}"
    # "the authority …", "this WorkItem …" open with a capital; a name is written as its
    # owner wrote it
    return "T" + sentence[1:] if sentence.startswith(("the ", "this ")) else sentence


#: where an event carries a person's own words (a comment, a reason, a note, a message)
SAID_KEYS = ("comment", "note", "text", "required_resolution", "reason")
#: ``reason`` values that are codes, said by the sentence itself rather than quoted
_CODED_REASONS = frozenset(REASONS) | frozenset(REJECTIONS) | {"accepted_by_another"}


def said(document: Mapping[str, Any]) -> str:
    """What the event's author wrote in it, if anything (shown after the sentence, quoted;
    a card that already shows it, like the refusal panel, leaves it out)."""
    payload = document.get("payload")
    if not isinstance(payload, Mapping):
        return ""
    for key in SAID_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value.strip() and value not in _CODED_REASONS:
            return " ".join(value.split())
    review = payload.get("review")
    if isinstance(review, Mapping) and isinstance(review.get("summary"), str):
        return " ".join(review["summary"].split())
    return ""


# --- the filter's words: families and kinds ----------------------------------------------

FAMILY_LABELS = {
    "mission": "Missions",
    "work": "WorkItems",
    "approval": "Execution approvals",
    "lease": "Leases",
    "review": "Reviews",
    "evidence": "Evidence",
    "artifact": "Artifacts",
    "capability": "Capabilities",
    "context": "Context packages",
    "membership": "Memberships",
    "snapshot": "Snapshots",
    "ext": "Offline usage",
}

#: each event type as a short noun phrase, for the filter and a line's tooltip
KINDS: dict[str, str] = {
    "mission.created": "Mission created",
    "mission.approved": "Mission approved",
    "mission.failed": "Mission failed",
    "mission.cancelled": "Mission cancelled",
    "mission.changes_requested": "Changes requested",
    "mission.child_created": "Child mission started",
    "mission.child_approved": "Child mission approved",
    "mission.child_failed": "Child mission failed",
    "mission.child_cancelled": "Child mission cancelled",
    "mission.child_usage_recorded": "Child mission usage",
    "work.proposed": "Work proposed",
    "work.authorized": "WorkItem authorised",
    "work.replaced": "WorkItem replaced",
    "work.reprioritized": "Priority changed",
    "work.message_posted": "Message",
    "work.asked": "Someone asked",
    "work.offered": "Offered",
    "work.offer_accepted": "Offer accepted",
    "work.offer_rejected": "Offer turned down",
    "work.offer_withdrawn": "Offer withdrawn",
    "approval.execution_granted": "Execution approved",
    "approval.execution_refused": "Execution refused",
    "work.started": "Started",
    "lease.renewed": "Lease renewed",
    "lease.expired": "Lease expired",
    "lease.revoked": "Lease revoked",
    "work.reassigned": "Reassigned",
    "work.schedule_disclosed": "Schedule told",
    "capability.issued": "Capability issued",
    "work.progress_reported": "Progress",
    "work.usage_recorded": "Usage",
    "ext.missionweaveprotocol.core.resource_usage_recorded": "Offline usage",
    "work.checkpointed": "Checkpoint",
    "work.blocked": "Blocked",
    "work.unblocked": "Unblocked",
    "artifact.published": "Artifact published",
    "work.submitted": "Submitted",
    "work.late_result_recorded": "Late result",
    "work.retry_scheduled": "Retry scheduled",
    "review.requested": "Review requested",
    "review.reserved": "Review started",
    "review.released": "Review ended",
    "evidence.recorded": "Evidence",
    "work.result_accepted": "Result accepted",
    "work.failed": "Failed",
    "work.cancelled": "WorkItem cancelled",
    "work.dependency_ended": "Dependency ended",
    "work.dependency_restored": "Dependency restored",
    "context.published": "Context published",
    "context.forwarded": "Context sent",
    "context.received": "Context received",
    "membership.granted": "Member added",
    "membership.changed": "Roles changed",
    "membership.revoked": "Member removed",
    "snapshot.created": "Snapshot",
}


def family_of(event_type: str) -> str:
    return event_type.split(".", 1)[0]


def kind(event_type: object) -> str:
    """An event type as a short phrase ("Lease expired"); an unknown one as "Other event"."""
    return KINDS.get(str(event_type), "Other event")


def filter_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """The event-type filter's choices in words, by family: ``[(family label, [(value,
    label)])]``; a family's value is ``family:<name>`` (all its types)."""
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    for family, label in FAMILY_LABELS.items():
        types = [t for t in KINDS if family_of(t) == family]
        options = [(f"family:{family}", f"All: {label.lower()}")] if len(types) > 1 else []
        options += [(t, KINDS[t]) for t in types]
        groups.append((label, options))
    return groups


def types_of(choice: str) -> frozenset[str] | None:
    """The event types a filter choice stands for, or ``None`` when it stands for none."""
    if choice.startswith("family:"):
        family = choice.removeprefix("family:")
        types = frozenset(t for t in KINDS if family_of(t) == family)
        return types or None
    return frozenset({choice}) if choice in KINDS else None
