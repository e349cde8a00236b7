"""Reads behind "who may approve", "who was asked" and the "Ask … from" forms (issue 36 §4).

The approval page names the people an execution approval still waits for and the review page
the people who may review, each with the asks already made ("Asked of Omar Ortiz by Olivia
Ortega, 2 min ago"). Who may still approve is the protocol core's answer
(``asks.approvers``: the grant's own refusal, asked for each member without writing), never a
second copy of the rules; whether the viewer may ask is the write path's role check
(``preview.permitted_by``). One read of the group's memberships per page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.ledger import preview
from apps.ledger.write_path import Caller
from apps.registry.models import Membership
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work import asks
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .inbox_entries import relative_text

APPROVAL = asks.EXECUTION_APPROVAL
REVIEW = asks.REVIEW
#: the ask form's name in a ``decision_forms.NotSent``: its note goes back into the panel
ASK_FORM = "ask"
#: what each ask is for, as the page's form and sentences say it
FOR_WORDS = {asks.EXECUTION_APPROVAL: "approval", asks.REVIEW: "a review"}


@dataclass(frozen=True)
class Ask:
    """One ask as a page shows it: who asked whom, when, and the note."""

    asked: tuple[str, ...]
    by: str
    note: str
    recorded_at: str
    #: the people named who have not answered yet (empty: answered, or no longer waiting)
    waiting: tuple[str, ...]
    now: datetime

    @property
    def at(self) -> datetime:
        return parse_timestamp(self.recorded_at)

    @property
    def ago(self) -> str:
        return relative_text(self.at, self.now)


@dataclass(frozen=True)
class AskPanel:
    """The people a decision waits for, the asks made, and the viewer's "Ask … from" form."""

    wanted: str  # asks.EXECUTION_APPROVAL or asks.REVIEW
    #: who may act now, in the group's order (for an approval: who may still approve)
    candidates: tuple[str, ...]
    #: the asks of the revision or submission shown, oldest first
    asked: tuple[Ask, ...]
    #: whether the viewer's role may ask (coordinator, mission_owner)
    may_ask: bool
    viewer: str

    @property
    def choices(self) -> tuple[str, ...]:
        """Whom the viewer may ask: the candidates but themselves."""
        return tuple(p for p in self.candidates if p != self.viewer)

    @property
    def offers_form(self) -> bool:
        return self.may_ask and bool(self.choices)

    @property
    def approval(self) -> bool:
        return self.wanted == asks.EXECUTION_APPROVAL

    @property
    def for_words(self) -> str:
        return FOR_WORDS[self.wanted]

    @property
    def principals(self) -> set[str]:
        named = set(self.candidates)
        for ask in self.asked:
            named.update(ask.asked)
            named.add(ask.by)
        return named


def group_members(group_id: str) -> list[MembershipState]:
    """The group's active members, in principal order (one read)."""
    rows = Membership.objects.filter(group_id=group_id, active=True).order_by("principal")
    return [row.to_state() for row in rows]


def _asks_about(item: WorkItemState, wanted: str, now: datetime) -> tuple[Ask, ...]:
    """The asks of ``wanted`` about what the item shows now: its revision for an approval,
    its current submission for a review."""
    open_by_sequence = {a["sequence"]: a["waiting"] for a in asks.open_asks(item)}
    submission = (item.review or {}).get("submission")
    return tuple(
        Ask(
            asked=tuple(entry["asked"]),
            by=str(entry["by"]),
            note=str(entry.get("note") or ""),
            recorded_at=str(entry["recorded_at"]),
            waiting=tuple(open_by_sequence.get(entry["sequence"], ())),
            now=now,
        )
        for entry in item.asks
        if entry["for"] == wanted
        and (
            entry["revision"] == item.revision
            if wanted == asks.EXECUTION_APPROVAL
            else entry.get("submission") == submission
        )
    )


def ask_panel(
    caller: Caller,
    membership: MembershipState | None,
    group_id: str,
    item: WorkItemState,
    wanted: str,
    *,
    now: datetime | None = None,
) -> AskPanel:
    """The panel for ``item``'s approval or review, as ``caller`` sees it."""
    members = group_members(group_id)
    if wanted == asks.EXECUTION_APPROVAL:
        candidates = asks.approvers(item, members)
    else:
        candidates = asks.reviewers(item, members)
    return AskPanel(
        wanted=wanted,
        candidates=tuple(candidates),
        asked=_asks_about(item, wanted, now or timezone.now()),
        may_ask=asks.ASK in preview.permitted_by(caller, membership, [asks.ASK]),
        viewer=caller.principal,
    )


def ask_body(work_item: str, wanted: str, data: dict[str, Any]) -> dict[str, Any]:
    """The ``work.ask`` body a form asks for: the people chosen, the note when written, and
    the revision or submission the page showed (a stale page is refused, never misapplied)."""
    body: dict[str, Any] = {"work_item": work_item, "for": wanted, "asked": list(data["asked"])}
    if data.get("note", "").strip():
        body["note"] = data["note"].strip()
    if wanted == asks.EXECUTION_APPROVAL and data.get("contract_revision"):
        body["contract_revision"] = data["contract_revision"]
    if wanted == asks.REVIEW and data.get("submission"):
        body["submission"] = data["submission"]
    return body
