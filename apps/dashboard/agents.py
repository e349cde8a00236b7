"""Reads behind the Agents screens (issue 37 §3): each agent of a group as a card — its Agent
Card's capabilities and concurrency (R11.1-11), its current session (R11.3-10), its Presence
(R11.1-11), the leases it holds now in this group (R11.3-03), its last progress report
(R11.4-01) and its recent failures (R11.4-08, R11.4-10) — and an agent's WorkItems, paged.

Every read is a fixed number of indexed queries whatever the number of agents or of the
group's WorkItems and events: the group's agents from the membership projection; their cards,
current sessions and Presence one query each; the leases they hold by ``work_workitem``'s
partial ``lease_holder`` index; their unfinished WorkItems counted by ``(group, owner)``; the
newest progress reports and failures of the group by ``event (group, type, sequence)``,
backwards and bounded (:data:`RECENT_PROGRESS`, :data:`RECENT_FAILURES`). A progress report
or a failure older than that window is not shown: the card is about what an agent is doing
now, and its WorkItems (the agent's page) keep the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Max
from django.utils import timezone

from apps.ledger.models import Event
from apps.registry.models import AgentCard, AgentSession, Membership
from apps.registry.presence import presences
from apps.work.models import WorkItem
from missionweave.protocol import states as S

from .inbox_entries import relative_text
from .presence import presence_words
from .selectors import timeline_head
from .work_item_cards import Countdown

#: the group's newest progress reports and failures read for the cards (a bounded window)
RECENT_PROGRESS = 200
#: the group's newest events looked through for each agent's latest command (a bounded
#: window of the log: a range of its (group, sequence) key, whatever the log's length)
RECENT_ACTIVITY = 2_000
RECENT_FAILURES = 100
#: failures shown on one card
FAILURES_SHOWN = 5
#: WorkItems a page of the agent's page lists
ITEMS_PER_PAGE = 25
#: the agent page's filters: what a person asks for, and the states it means
ITEM_FILTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "": ("All", ()),
    "now": ("Working on now", (S.ACTIVE, S.BLOCKED)),
    "queued": ("Queued", (S.QUEUED,)),
    "submitted": ("Submitted", (S.SUBMITTED,)),
    "verified": ("Verified", (S.VERIFIED,)),
    "failed": ("Failed", (S.FAILED,)),
    "cancelled": ("Cancelled", (S.CANCELLED,)),
}
#: why retries ended (``work.failed``'s ``retries_exhausted``, R11.4-10), in words
EXHAUSTED_WORDS = {
    "attempts": "no attempts were left",
    "deadline": "another attempt would have missed its deadline",
    "cost": "another attempt would have gone over its budget",
    "permanent": "the agent said another attempt could not succeed",
}
FAILURE_TYPES = ("work.failed", "work.retry_scheduled")


def _now() -> datetime:
    """The clock countdowns and ages are read against (a seam for tests)."""
    return timezone.now()


@dataclass(frozen=True)
class Capability:
    id: str
    version: str


@dataclass(frozen=True)
class Session:
    """The agent's current session (only the newest is valid, R11.3-10)."""

    number: int  # the session epoch: "its 3rd session"
    opened_at: datetime
    expires_at: datetime

    @property
    def ordinal(self) -> str:
        n = self.number
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"

    @property
    def technical(self) -> list[tuple[str, str]]:
        return [("session epoch", str(self.number))]


@dataclass(frozen=True)
class HeldLease:
    """A lease the agent holds now in this group, with its expiry as a countdown."""

    work_item: str
    title: str
    state: str
    lease_id: str
    started_at: str
    expires_at: str
    expiry: Countdown

    @property
    def technical(self) -> list[tuple[str, str]]:
        return [("lease", self.lease_id), ("WorkItem", self.work_item)]


@dataclass(frozen=True)
class Progress:
    """The agent's newest structured progress report in this group (R11.4-01)."""

    work_item: str
    title: str
    phase: str
    recorded_at: datetime
    next_checkpoint: str = ""
    blockers: tuple[str, ...] = ()
    #: the WorkItem's state now: once submitted or ended, the report is history and its
    #: next checkpoint and blockers are not said ("next checkpoint: the report" of a verified one)
    state: str = ""

    @property
    def work_done(self) -> bool:
        return self.state in S.WORK_DONE


@dataclass(frozen=True)
class Failure:
    """A failed attempt (a retry waits, R11.4-08) or a WorkItem failed for good (R11.4-10)."""

    work_item: str
    title: str
    sequence: int
    recorded_at: datetime
    final: bool
    reason: str
    actor: str
    #: when a failed attempt's retry may start (R11.4-08); "" for a final failure
    retry_at: str = ""

    @property
    def technical(self) -> list[tuple[str, str]]:
        event = "work.failed" if self.final else "work.retry_scheduled"
        return [("event", f"#{self.sequence} {event}"), ("by", self.actor)]


@dataclass
class AgentCardView:
    """One agent of the group, as its card shows it."""

    principal: str
    roles: tuple[str, ...]
    capabilities: tuple[Capability, ...] = ()
    max_concurrency: int | None = None
    card_version: str = ""
    session: Session | None = None
    presence: str | None = None
    presence_at: datetime | None = None
    leases: list[HeldLease] = field(default_factory=list)
    #: its unfinished WorkItems in this group by state (queued, active, blocked, submitted…)
    counts: dict[str, int] = field(default_factory=dict)
    progress: Progress | None = None
    failures: list[Failure] = field(default_factory=list)
    #: when its newest event among the group's recent ones was recorded: a coordinator or a
    #: reviewer sends no Presence, and its commands are its signs of life
    acted_at: datetime | None = None

    @property
    def agent_id(self) -> str:
        return self.principal.removeprefix("agent:")

    @property
    def last_seen(self) -> datetime | None:
        """The newest sign of life the card knows of: a session opened, a Presence report, a
        progress report, a command it sent here (all already read: no query of its own)."""
        seen = [
            moment
            for moment in (
                self.session.opened_at if self.session else None,
                self.presence_at,
                self.progress.recorded_at if self.progress else None,
                self.acted_at,
            )
            if moment is not None
        ]
        return max(seen) if seen else None

    @property
    def last_seen_text(self) -> str:
        seen = self.last_seen
        return relative_text(seen, _now()) if seen else ""

    @property
    def count_words(self) -> list[tuple[str, int]]:
        """Its unfinished WorkItems by state, in the lifecycle's order."""
        return [(state, self.counts[state]) for state in S.STATES if self.counts.get(state)]

    @property
    def technical(self) -> list[tuple[str, str]]:
        pairs = [("principal", self.principal)]
        if self.card_version:
            pairs.append(("Agent Card version", self.card_version))
        if self.session is not None:
            pairs.extend(self.session.technical)
        return pairs


# --- reads ---------------------------------------------------------------------------------


def agent_members(group_id: str, *, only: str | None = None) -> list[Membership]:
    """The group's active agent members (or the one ``only`` names), by principal."""
    rows = Membership.objects.filter(group_id=group_id, active=True, principal__startswith="agent:")
    if only is not None:
        rows = rows.filter(principal=only)
    return list(rows.order_by("principal"))


def cards(
    group_id: str, *, only: str | None = None, head: int | None = None
) -> list[AgentCardView]:
    """Every agent member's card (or the one ``only`` names: ``agent:<id>``); ``head``, the
    group's head when the caller already read it (the page does, for its live stream)."""
    members = agent_members(group_id, only=only)
    views = {m.principal: AgentCardView(m.principal, tuple(m.roles)) for m in members}
    if not views:
        return []
    ids = {principal.removeprefix("agent:"): principal for principal in views}
    _fill_agent_cards(views, ids)
    _fill_sessions(views, ids)
    _fill_presence(views, ids)
    _fill_counts(views, group_id)
    _fill_leases(views, group_id)
    _fill_progress(views, group_id)
    _fill_failures(views, group_id)
    _fill_activity(views, group_id, timeline_head(group_id) if head is None else head)
    return list(views.values())


def _fill_activity(views: dict[str, AgentCardView], group_id: str, head: int) -> None:
    """When each agent's newest event among the group's last ``RECENT_ACTIVITY`` was
    recorded: one grouped query over a range of the log's key. "Last seen 18 min ago" was
    the session's opening for a coordinator that had sent a command a second before."""
    rows = (
        Event.objects.filter(
            group_id=group_id,
            sequence__gt=max(0, head - RECENT_ACTIVITY),
            actor__in=list(views),
        )
        .values("actor")
        .annotate(at=Max("recorded_at"))
        .values_list("actor", "at")
    )
    for actor, at in rows:
        views[actor].acted_at = at


def _fill_agent_cards(views: dict[str, AgentCardView], ids: dict[str, str]) -> None:
    """The newest Agent Card of each (R11.1-11): one query, newest first per agent."""
    rows = (
        AgentCard.objects.filter(agent_id__in=ids)
        .order_by("agent_id", "-recorded_at", "-pk")
        .values_list("agent_id", "version", "card")
    )
    seen: set[str] = set()
    for agent_id, version, card in rows:
        if agent_id in seen or not isinstance(card, dict):
            continue
        seen.add(agent_id)
        view = views[ids[agent_id]]
        view.card_version = version
        view.capabilities = tuple(
            Capability(str(c.get("id", "")), str(c.get("version", "")))
            for c in card.get("capabilities") or ()
            if isinstance(c, dict)
        )
        concurrency = card.get("max_concurrency")
        view.max_concurrency = concurrency if isinstance(concurrency, int) else None


def _fill_sessions(views: dict[str, AgentCardView], ids: dict[str, str]) -> None:
    """The session at each agent's current epoch, the only valid one (R11.3-10)."""
    rows = AgentSession.objects.filter(agent_id__in=ids, epoch=F("agent__session_epoch"))
    for row in rows.only("agent_id", "epoch", "created_at", "expires_at"):
        views[ids[row.agent_id]].session = Session(row.epoch, row.created_at, row.expires_at)


def _fill_presence(views: dict[str, AgentCardView], ids: dict[str, str]) -> None:
    now = _now()
    for agent_id, (report, at) in presences(ids).items():
        view = views[ids[agent_id]]
        view.presence, view.presence_at = presence_words(report, at, now), at


def _fill_counts(views: dict[str, AgentCardView], group_id: str) -> None:
    """Its unfinished WorkItems counted by state: one grouped, indexed read."""
    rows = (
        WorkItem.objects.filter(
            group_id=group_id, owner__in=list(views), state__in=sorted(S.UNFINISHED)
        )
        .values("owner", "state")
        .annotate(n=Count("id"))
    )
    for row in rows:
        views[row["owner"]].counts[row["state"]] = row["n"]


def _fill_leases(views: dict[str, AgentCardView], group_id: str) -> None:
    """The active leases each holds in this group (``lease_holder``'s partial index)."""
    now = _now()
    rows = (
        WorkItem.objects.filter(lease_holder__in=list(views), group_id=group_id)
        .order_by("id")
        .values_list("lease_holder", "work_item_id", "title", "state", "data__lease")
    )
    for holder, item, title, state, lease in rows:
        if not isinstance(lease, dict):
            continue
        views[holder].leases.append(
            HeldLease(
                work_item=item,
                title=title,
                state=state,
                lease_id=str(lease.get("lease_id", "")),
                started_at=str(lease.get("started_at", "")),
                expires_at=str(lease["expires_at"]),
                expiry=Countdown(str(lease["expires_at"]), now),
            )
        )


def _recent(group_id: str, type_: str, limit: int) -> list[tuple[int, str, datetime, str]]:
    """The group's newest events of one type, by ``event (group, type, sequence)``."""
    return list(
        Event.objects.filter(group_id=group_id, type=type_)
        .order_by("-sequence")
        .values_list("sequence", "actor", "recorded_at", "document")[:limit]
    )


def _titles(group_id: str, items: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """Each WorkItem's title, owner and state, one query."""
    rows = WorkItem.objects.filter(group_id=group_id, work_item_id__in=set(items))
    return {
        item: (title, owner, state)
        for item, title, owner, state in rows.values_list("work_item_id", "title", "owner", "state")
    }


def _fill_progress(views: dict[str, AgentCardView], group_id: str) -> None:
    """Each agent's newest progress report among the group's newest ones (R11.4-01)."""
    newest: dict[str, tuple[int, datetime, dict[str, Any]]] = {}
    for sequence, actor, recorded_at, document in _recent(
        group_id, "work.progress_reported", RECENT_PROGRESS
    ):
        if actor in views and actor not in newest:
            newest[actor] = (sequence, recorded_at, json.loads(document).get("payload", {}))
    if not newest:
        return
    titles = _titles(group_id, (str(p.get("work_item", "")) for _s, _r, p in newest.values()))
    for actor, (_sequence, recorded_at, payload) in newest.items():
        item = str(payload.get("work_item", ""))
        title, _owner, state = titles.get(item, ("", "", ""))
        views[actor].progress = Progress(
            work_item=item,
            title=title,
            state=state,
            phase=str(payload.get("phase", "")),
            recorded_at=recorded_at,
            next_checkpoint=str(payload.get("next_checkpoint") or ""),
            blockers=tuple(str(b) for b in payload.get("blockers") or ()),
        )


def failure_reason(payload: dict[str, Any], *, final: bool, by_owner: bool) -> str:
    """Why, in words: what the failing evidence says, and for the agent's own final failure
    why no other attempt follows (R11.4-10)."""
    said = [
        str(e.get("result", {}).get("summary") or "").strip()
        for e in payload.get("evidence") or ()
        if isinstance(e, dict) and e.get("result", {}).get("verdict") != "pass"
    ]
    said = [s for s in said if s]
    what = f"“{'; '.join(said[:2])}”" if said else "no reason given"
    if not final:
        return f"An attempt failed: {what}; it tries again after a pause."
    if not by_owner:  # a reviewer or the coordinator ended it (the card names who)
        return f"Failed: {what}."
    why = EXHAUSTED_WORDS.get(str(payload.get("retries_exhausted") or ""), "")
    return f"Failed for good: {what}" + (f"; {why}." if why else ".")


def _fill_failures(views: dict[str, AgentCardView], group_id: str) -> None:
    """The agents' failures among the group's newest ones: its own ``work.fail`` (with its
    lease) is the agent's; a judge's or a coordinator's failing of a WorkItem is its owner's.
    A WorkItem ended by its mission's end is no failure of the agent's."""
    found: list[tuple[int, str, datetime, dict[str, Any], bool]] = []
    for type_ in FAILURE_TYPES:
        for sequence, actor, recorded_at, document in _recent(group_id, type_, RECENT_FAILURES):
            payload = json.loads(document).get("payload", {})
            if not payload.get("propagated_from"):
                found.append((sequence, actor, recorded_at, payload, type_ == "work.failed"))
    if not found:
        return
    titles = _titles(group_id, (str(p.get("work_item", "")) for _s, _a, _r, p, _f in found))
    for sequence, actor, recorded_at, payload, final in sorted(found, key=lambda f: -f[0]):
        item = str(payload.get("work_item", ""))
        title, owner, _state = titles.get(item, ("", "", ""))
        by_owner = "lease_id" in payload
        whose = actor if by_owner else owner
        view = views.get(whose)
        if view is None or len(view.failures) >= FAILURES_SHOWN:
            continue
        view.failures.append(
            Failure(
                work_item=item,
                title=title,
                sequence=sequence,
                recorded_at=recorded_at,
                final=final,
                reason=failure_reason(payload, final=final, by_owner=by_owner),
                actor=actor,
                retry_at="" if final else str(payload.get("retry_at") or ""),
            )
        )


# --- an agent's WorkItems ------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRow:
    work_item: str
    title: str
    state: str
    mission: str
    urgency: str


@dataclass(frozen=True)
class ItemListing:
    """A page of the agent's WorkItems, newest authorised first (``(group, owner)``)."""

    page: Page[ItemRow]
    filter: str
    filters: Sequence[tuple[str, str]]

    @property
    def label(self) -> str:
        return ITEM_FILTERS[self.filter][0]

    @property
    def rows(self) -> list[ItemRow]:
        return list(self.page.object_list)


def items_of(group_id: str, principal: str, *, filter_: str, page: object) -> ItemListing:
    """The WorkItems ``principal`` owns (or last owned) in the group, filtered by what they
    are to it now; an unknown filter is all of them."""
    filter_ = filter_ if filter_ in ITEM_FILTERS else ""
    rows = WorkItem.objects.filter(group_id=group_id, owner=principal)
    states = ITEM_FILTERS[filter_][1]
    if states:
        rows = rows.filter(state__in=states)
    values = rows.order_by("-id").values_list(
        "work_item_id", "title", "state", "mission", "urgency"
    )
    paginator: Paginator[Any] = Paginator(values, ITEMS_PER_PAGE)
    numbered = paginator.get_page(page)
    numbered.object_list = [ItemRow(*row) for row in numbered.object_list]
    return ItemListing(
        page=numbered,
        filter=filter_,
        filters=[(key, label) for key, (label, _states) in ITEM_FILTERS.items()],
    )
