"""What the inbox lists: one entry per thing waiting for the person, and the sections.

Plain data with the words and addresses a template shows, computed once here: the inbox
renders up to :data:`SHOWN` entries per section on every live refresh, and template filters
and ``reverse`` per entry cost more than the reads behind them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

from django.urls import NoReverseMatch, reverse

from missionweave.protocol import states as S
from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .work_item_cards import Countdown

#: entries a section shows, the most urgent and oldest first; the rest on request
SHOWN = 10
#: sorts after every real urgency and deadline
_NO_URGENCY = len(URGENCIES)
_NO_DEADLINE = "~"


@cache
def _has_route(name: str, arity: int) -> bool:
    """Whether the dashboard serves the screen ``name`` (some are built by others)."""
    try:
        reverse(name, args=["x"] * arity)
    except NoReverseMatch:
        return False
    return True


def optional_url(name: str, *args: str) -> str | None:
    """The page's address, or ``None`` while that screen is not built (its route missing)."""
    return reverse(name, args=args) if _has_route(name, len(args)) else None


def wire_text(value: str | None) -> str:
    """A wire.md timestamp as people read it (``2026-11-30 12:16 UTC``)."""
    try:
        return parse_timestamp(value).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError):
        return value or ""


def relative_text(moment: datetime, now: datetime) -> str:
    """ "3 min ago", as ``static/dashboard/times.js`` writes it (which keeps it fresh)."""
    seconds = round((now - moment).total_seconds())
    if seconds < 5:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


@dataclass(frozen=True)
class GroupRef:
    id: str
    name: str
    roles: tuple[str, ...]
    head_sequence: int


@dataclass
class Entry:
    """One thing waiting for the person. Sorted by the contract's urgency (most urgent
    first), then its deadline (nearest first), then how long it has waited (oldest first)."""

    group: GroupRef
    mission: str
    title: str
    urgency: str | None = None
    deadline: str | None = None
    #: the event that began the wait; its time is read in one batch per group
    since_sequence: int | None = None
    since: datetime | None = None
    #: the clock the page was rendered against
    now: datetime | None = None
    #: when the person's snooze of it ends (listed only when they asked to see snoozed ones)
    snoozed_until: datetime | None = None

    @property
    def sort_key(self) -> tuple[Any, ...]:
        rank = (
            len(URGENCIES) - URGENCIES.index(self.urgency)
            if self.urgency in URGENCIES
            else _NO_URGENCY
        )
        since = self.since.timestamp() if self.since is not None else float("inf")
        return (rank, self.deadline or _NO_DEADLINE, since, self.group.id, self.title)

    @property
    def subject(self) -> str:
        """The WorkItem or mission the entry is about (with group and kind, its key)."""
        return getattr(self, "work_item", "") or self.mission

    @property
    def snoozed_text(self) -> str:
        return self.snoozed_until.strftime("%Y-%m-%d %H:%M UTC") if self.snoozed_until else ""

    @property
    def snoozed_iso(self) -> str:
        return self.snoozed_until.isoformat() if self.snoozed_until else ""

    @property
    def urgent(self) -> bool:
        return self.urgency in ("high", "critical")

    @property
    def deadline_text(self) -> str:
        return wire_text(self.deadline)

    @property
    def since_iso(self) -> str:
        return self.since.isoformat() if self.since else ""

    @property
    def since_exact(self) -> str:
        return self.since.strftime("%Y-%m-%d %H:%M:%S UTC") if self.since else ""

    @property
    def since_text(self) -> str:
        return relative_text(self.since, self.now) if self.since and self.now else ""

    @property
    def mission_url(self) -> str:
        return optional_url("dashboard:mission", self.group.id, self.mission) or (
            reverse("dashboard:group", args=[self.group.id]) + f"#mission-{self.mission}"
        )


@dataclass
class ApprovalEntry(Entry):
    """A queued, gated WorkItem whose grant the write path would take from the person."""

    item: WorkItemState | None = None
    start_by: Countdown | None = None

    @property
    def work_item(self) -> str:
        return self.item.id if self.item else ""

    @property
    def risk_class(self) -> str:
        return str(self.item.contract.get("risk", {}).get("class", "")) if self.item else ""

    @property
    def approvals(self) -> int:
        return len(self.item.approvals) if self.item else 0

    @property
    def approvals_required(self) -> int:
        return approvals_required(self.item) if self.item else 0

    @property
    def start_by_text(self) -> str:
        return wire_text(self.start_by.target) if self.start_by else ""

    @property
    def url(self) -> str:
        return reverse("dashboard:approval", args=[self.group.id, self.work_item])


@dataclass(frozen=True)
class Criterion:
    id: str
    description: str


@dataclass(frozen=True)
class Reservation:
    """Who reviews the item now (advisory: it keeps two reviewers from judging one item at
    once, it changes nobody's rights)."""

    reviewer: str
    expires_at: str

    @property
    def until(self) -> datetime:
        return parse_timestamp(self.expires_at)

    @property
    def until_text(self) -> str:
        return self.until.strftime("%H:%M UTC")


@dataclass
class ReviewEntry(Entry):
    """A submitted result the person may judge (details read only for the entries shown)."""

    work_item: str = ""
    #: ``human_review`` criteria nobody has judged yet
    awaiting_human: tuple[Criterion, ...] = ()
    #: someone else's unexpired reservation (``None``: free, or the viewer's own)
    reserved_by_other: Reservation | None = None
    reserved_by_viewer: Reservation | None = None

    @property
    def url(self) -> str:
        return optional_url("dashboard:review", self.group.id, self.work_item) or reverse(
            "dashboard:work-item", args=[self.group.id, self.work_item]
        )


@dataclass
class MissionEntry(Entry):
    """An active mission whose every WorkItem has finished."""

    items: int = 0

    @property
    def url(self) -> str:
        return optional_url(
            "dashboard:mission-final-approval", self.group.id, self.mission
        ) or reverse("dashboard:group", args=[self.group.id])


@dataclass
class BlockedEntry(Entry):
    """A WorkItem of the person's missions that cannot move without someone acting."""

    work_item: str = ""
    state: str = ""
    reason: str = ""
    #: stopped by the agent holding it (its lease owner): what that agent said must happen
    #: (``required_resolution``, R11.4-04), read from the ``work.blocked`` event with the times
    wants_resolution: bool = False
    #: the refusal of the current revision's execution ({principal, comment, recorded_at,
    #: …}): the item waits for a corrected contract (issue 34 §4)
    refusal: dict[str, Any] | None = None
    #: where the person can move it on: the final approval of the child mission it waits for,
    #: once that child's work is all finished (R10.2-16)
    next_step_url: str = ""

    @property
    def needs_contract(self) -> bool:
        return self.refusal is not None

    @property
    def refusal_details(self) -> list[tuple[str, str]]:
        """The refusal's raw terms, for the entry's collapsed technical details."""
        refusal = self.refusal or {}
        return [
            ("work item", self.work_item),
            ("refused revision", str(refusal.get("revision", ""))),
            ("event", f"#{refusal.get('sequence', '')}"),
        ]

    @property
    def url(self) -> str:
        if self.state == S.QUEUED:
            return reverse("dashboard:approval", args=[self.group.id, self.work_item])
        return reverse("dashboard:work-item", args=[self.group.id, self.work_item])


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    #: the entries shown: the first :data:`SHOWN`, or all of them when asked
    entries: tuple[Entry, ...]
    #: how many wait in all
    count: int
    #: what would appear here, said when nothing does
    empty: str
    #: every entry is shown, a page at a time, because the person asked for this section
    expanded: bool = False
    #: entries of this section the person snoozed (hidden unless they asked to see them)
    snoozed: int = 0
    #: the page shown of an expanded section, of how many, and where it starts
    page: int = 1
    pages: int = 1
    offset: int = 0
    #: addresses that keep the person's filters: ``more`` (this section in pages), ``less``
    #: (back to the preview), ``previous`` and ``next`` page
    links: dict[str, str] = field(default_factory=dict)

    @property
    def more(self) -> int:
        return self.count - len(self.entries)

    @property
    def collapsible(self) -> bool:
        """Shown in full on request, with more entries than the inbox shows by default."""
        return self.expanded and self.count > SHOWN

    @property
    def paged(self) -> bool:
        return self.expanded and self.pages > 1

    @property
    def first(self) -> int:
        return self.offset + 1

    @property
    def last(self) -> int:
        return self.offset + len(self.entries)

    @property
    def asked(self) -> bool:
        """Asked of the person by name, rather than of anyone holding their role."""
        return self.key == "asked"


@dataclass(frozen=True)
class Inbox:
    principal: str
    groups: tuple[GroupRef, ...]
    sections: tuple[Section, ...]
    #: the section shown in full (``?show=<key>``), if any
    show: str = ""
    #: entries hidden by the person's snoozes, in the sections listed
    snoozed: int = 0
    #: whether the snoozed entries are listed, and the address that turns that around
    showing_snoozed: bool = False
    snoozed_url: str = ""

    @property
    def total(self) -> int:
        return sum(section.count for section in self.sections)

    @property
    def asked_sections(self) -> tuple[Section, ...]:
        """What someone asked of the person by name (issue 36 §4)."""
        return tuple(section for section in self.sections if section.asked)

    @property
    def anyone_sections(self) -> tuple[Section, ...]:
        """What anyone holding the person's role may act on (issue 37 §5)."""
        return tuple(section for section in self.sections if not section.asked)

    @property
    def principals(self) -> set[str]:
        """Everyone the shown entries name (``names.prime`` looks them up at once)."""
        named: set[str] = {self.principal}
        for section in self.sections:
            for entry in section.entries:
                for reservation in (
                    getattr(entry, "reserved_by_other", None),
                    getattr(entry, "reserved_by_viewer", None),
                ):
                    if reservation is not None:
                        named.add(reservation.reviewer)
                if asked_by := getattr(entry, "asked_by", ""):
                    named.add(asked_by)
                refusal = getattr(entry, "refusal", None)
                if refusal:
                    named.add(str(refusal.get("principal")))
        return named
