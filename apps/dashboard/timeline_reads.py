"""The Timeline page's reads: its filters as typed, and one page of matching events (issue 37 §2).

What each filter costs, on a log of millions of events (``ledger_event``'s indexes are
``(group, sequence)`` unique and ``(group, type, sequence)``):

- **kind** (a type or a family of types): the ``(group, type, sequence)`` index, one range
  per type; never more than a page of rows read.
- **time range**: turned into a range of sequences by a binary search over the unique index
  (``recorded_at`` is the authority's clock as each event is appended, so it rises with the
  sequence), about 2 × log₂(events) point reads; the rows are then also filtered by time.
- **who**, **mission**, **WorkItem**: no index holds them (the actor is a column; the mission
  and the WorkItem are inside the event's JSON), so a page examines at most ``SCAN_LIMIT``
  events of the log and, when it found fewer than a page among them, says "searched back to
  #…" and offers to search further. A page never scans the whole log.

A WorkItem's events are those that name it (``"work_item":"<id>"`` in the canonical JSON,
wherever it appears); a mission's, those that name the mission or one of its WorkItems.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from apps.ledger.models import Event, GroupLog
from apps.ledger.storage_check import storage_problems
from apps.registry.models import Membership

from . import event_words, timeline_subjects
from .event_lookup import lookup_for
from .timeline_links import LinkedPage, check_linked, predecessors_needed

PAGE_SIZE = 50
#: the most events one page examines for a filter no index answers (who, mission, WorkItem)
SCAN_LIMIT = 5_000
#: a mission with more WorkItems than this is filtered by its own events only
MISSION_ITEMS_LIMIT = 500
_CURSOR = re.compile(r"[0-9]{1,18}")
_PRINCIPAL = re.compile(r"(?:user|agent):[\w.@+:-]{1,150}|authority", re.ASCII)
_TIME_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d")


@dataclass(frozen=True)
class Filters:
    """The filters as read; ``errors`` says, per field, what could not be read."""

    values: dict[str, str]
    types: frozenset[str] | None = None
    actor: str = ""
    mission: str = ""
    mission_goal: str = ""
    mission_items: tuple[str, ...] = ()
    work_item: str = ""
    work_item_title: str = ""
    since: datetime | None = None
    until: datetime | None = None  # exclusive
    before: int | None = None
    after: int | None = None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return any(
            self.values.get(k) for k in ("kind", "who", "mission", "work_item", "from", "to")
        )

    @property
    def field_errors(self) -> dict[str, str]:
        """Every field's error, ``""`` where it read well (the template asks each field)."""
        return {key: self.errors.get(key, "") for key in self.values}

    @property
    def unindexed(self) -> bool:
        return bool(self.actor or self.mission or self.work_item)


def _time(raw: str) -> tuple[datetime, timedelta] | None:
    """A time as typed (a ``datetime-local`` field, in UTC) and its precision."""
    for pattern in _TIME_FORMATS:
        try:
            moment = datetime.strptime(raw, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
        precision = {10: timedelta(days=1), 16: timedelta(minutes=1)}.get(
            len(raw), timedelta(seconds=1)
        )
        return moment, precision
    return None


def read_filters(group_id: str, query: Mapping[str, str]) -> Filters:
    """Read ``?kind=&who=&mission=&work_item=&from=&to=&before=&after=``; never raises."""
    values = {key: str(query.get(key, "")).strip()[:200] for key in (
        "kind", "who", "mission", "work_item", "from", "to", "before", "after")}  # fmt: skip
    errors: dict[str, str] = {}
    found: dict[str, Any] = {}
    if values["kind"]:
        types = event_words.types_of(values["kind"])
        if types is None:
            errors["kind"] = f"“{values['kind']}” is not a kind of event this page knows."
        found["types"] = types
    if values["who"]:
        if _PRINCIPAL.fullmatch(values["who"]):
            found["actor"] = values["who"]
        else:
            errors["who"] = f"“{values['who']}” is not a person or an agent."
    if values["mission"]:  # an id, or words of a goal (``timeline_subjects``)
        mission = timeline_subjects.find(timeline_subjects.MISSION, group_id, values["mission"])
        if mission.error:
            errors["mission"] = mission.error
        else:
            values["mission"] = mission.id  # the pager's links carry the id it came to
            listed = mission.extra if isinstance(mission.extra, list) else ()
            found |= {"mission": mission.id, "mission_goal": mission.goal}
            found["mission_items"] = tuple(str(i) for i in listed[:MISSION_ITEMS_LIMIT])
    if values["work_item"]:
        item = timeline_subjects.find(timeline_subjects.WORK_ITEM, group_id, values["work_item"])
        if item.error:
            errors["work_item"] = item.error
        else:
            values["work_item"] = item.id
            found |= {"work_item": item.id, "work_item_title": item.goal}
    for key, target, end in (("from", "since", False), ("to", "until", True)):
        if values[key]:
            parsed = _time(values[key])
            if parsed is None:
                errors[key] = f"“{values[key]}” is not a time; write it as 2026-12-07 14:30 (UTC)."
            else:
                found[target] = parsed[0] + parsed[1] if end else parsed[0]
    if found.get("since") and found.get("until") and found["until"] <= found["since"]:
        errors["to"] = "“To” is before “From”: nothing could match."
    for key in ("before", "after"):
        if values[key]:
            if _CURSOR.fullmatch(values[key]) and int(values[key]) >= 1:
                found[key] = int(values[key])
            else:
                errors[key] = "The page asked for is not a number of an event."
    if found.get("before") and found.get("after"):
        errors["before"] = "A page goes either newer or older, not both."
    return Filters(
        values=values, errors=errors, **{k: v for k, v in found.items() if v is not None}
    )


@dataclass(frozen=True)
class Line:
    """One event of the page: its verdict and the sentence that says it."""

    checked: Any  # timeline.CheckedEvent
    words: str
    said: str  # what its author wrote in it (a comment, a reason), quoted after the words
    kind: str
    json: str


@dataclass(frozen=True)
class Page:
    lines: tuple[Line, ...]
    linked: LinkedPage
    head_sequence: int
    #: the sequence range this page examined, inclusive (``None`` when nothing to examine)
    searched: tuple[int, int] | None
    #: ``?before=`` of the next older page, ``?after=`` of the next newer page
    older_before: int | None
    newer_after: int | None
    #: the scan stopped at SCAN_LIMIT events short of the filter's bound
    scan_bounded: bool
    storage_problems: tuple[str, ...] = ()
    #: does the head row's hash equal the hash of the event at its sequence (wire.md §4 head)?
    #: ``False`` when the log's newest events were cut or rewritten under the head row
    head_matches: bool = True

    @property
    def verified(self) -> bool:
        return self.linked.verified and not self.storage_problems and self.head_matches


def _first_at_or_after(group_id: str, moment: datetime, low: int, high: int) -> int:
    """The smallest sequence in ``[low, high]`` recorded at or after ``moment``
    (``high + 1`` if none): a binary search of point reads on the unique index."""
    rows = Event.objects.filter(group_id=group_id)
    while low <= high:
        middle = (low + high) // 2
        at = rows.filter(sequence=middle).values_list("recorded_at", flat=True).first()
        if at is None or at >= moment:  # None: a gap cannot be online; search lower
            high = middle - 1
        else:
            low = middle + 1
    return low


def _bounds(group_id: str, filters: Filters, head: int) -> tuple[int, int]:
    """The sequences ``[low, high]`` the filters allow (empty when ``low > high``)."""
    first = (
        Event.objects.filter(group_id=group_id)
        .order_by("sequence")
        .values_list("sequence", flat=True)
        .first()
    )
    low, high = (first or 1), head
    if filters.since is not None:
        low = _first_at_or_after(group_id, filters.since, low, high)
    if filters.until is not None:
        high = _first_at_or_after(group_id, filters.until, low, high) - 1
    return low, high


def _needle(key: str, value: str) -> str:
    return f"{json.dumps(key)}:{json.dumps(value)}"


def _fetch(
    group_id: str, filters: Filters, between: tuple[int, int], *, newer: bool, page_size: int
) -> list[str]:
    """The documents of the first ``page_size`` matches in ``between`` (newest first, or
    oldest first when paging newer).

    A kind is read type by type, each an ordered range of the ``(group, type, sequence)``
    index cut at a page, and merged here: a family of thirty types costs thirty short index
    reads, never a sort of every event of those types in the log.
    """
    rows = _matching(group_id, filters).filter(sequence__gte=between[0], sequence__lte=between[1])
    order = "sequence" if newer else "-sequence"
    if filters.types is None:
        return list(rows.order_by(order).values_list("document", flat=True)[:page_size])
    found: list[tuple[int, str]] = []
    for type_ in sorted(filters.types):
        found += (
            rows.filter(type=type_).order_by(order).values_list("sequence", "document")[:page_size]
        )
    found.sort(key=lambda row: row[0], reverse=not newer)
    return [document for _sequence, document in found[:page_size]]


#: every WorkItem an event's canonical JSON names (ids never hold a quote: ``identifiers``)
_NAMED_WORK_ITEMS = r'"work_item":"([^"]+)"'


def _naming_mission(rows: Any, filters: Filters) -> Any:
    """The events that name the mission or one of its first ``MISSION_ITEMS_LIMIT`` WorkItems.

    On PostgreSQL each row's named WorkItems are pulled out by one simple regular expression
    and looked up in the mission's list: one pass over the row. An alternation of the
    mission's 500 ids, tried at every position of every row, took 1.4 s for a page of 5,000
    events (docs/benchmarks.md, section 10). Elsewhere (SQLite) the alternation stays."""
    needle = _needle("mission", filters.mission)
    items = list(filters.mission_items)
    if not items:
        return rows.filter(document__contains=needle)
    if connection.vendor == "postgresql":
        names_one = RawSQL(
            "EXISTS (SELECT 1 FROM regexp_matches(ledger_event.document, %s, 'g') AS named "
            "WHERE named[1] = ANY(%s))",
            (_NAMED_WORK_ITEMS, items),
            output_field=BooleanField(),
        )
        return rows.alias(names_one=names_one).filter(
            Q(document__contains=needle) | Q(names_one=True)
        )
    alternation = "|".join(re.escape(item) for item in items)
    pattern = re.escape(needle) + f'|"work_item":"({alternation})"'
    return rows.filter(document__regex=pattern)


def _matching(group_id: str, filters: Filters) -> Any:
    """The rows every filter but the kind allows (the kind is read type by type)."""
    rows = Event.objects.filter(group_id=group_id)
    if filters.actor:
        rows = rows.filter(actor=filters.actor)
    if filters.work_item:
        rows = rows.filter(document__contains=_needle("work_item", filters.work_item))
    if filters.mission:
        rows = _naming_mission(rows, filters)
    if filters.since is not None:
        rows = rows.filter(recorded_at__gte=filters.since)
    if filters.until is not None:
        rows = rows.filter(recorded_at__lt=filters.until)
    return rows


def timeline_page(group_id: str, filters: Filters, page_size: int = PAGE_SIZE) -> Page:
    """One page of the events ``filters`` match, newest first, verified.

    ``?before=N`` pages older (sequences < N, newest first), ``?after=N`` newer (sequences
    > N, the oldest page of them); neither is the newest page. Cursors, never OFFSET.
    """
    log = GroupLog.objects.get(group_id=group_id)
    head = log.head_sequence
    floor, ceiling = _bounds(group_id, filters, head)
    low, high = floor, ceiling
    newer = filters.after is not None
    if newer:
        low = max(low, (filters.after or 0) + 1)
    elif filters.before is not None:
        high = min(high, filters.before - 1)
    searched: tuple[int, int] | None = None
    scan_bounded = False
    documents: list[dict[str, Any]] = []
    if low <= high:
        if filters.unindexed and high - low + 1 > SCAN_LIMIT:
            scan_bounded = True
            if newer:
                high = low + SCAN_LIMIT - 1
            else:
                low = high - SCAN_LIMIT + 1
        searched = (low, high)
        texts = _fetch(group_id, filters, (low, high), newer=newer, page_size=page_size)
        documents = sorted(
            (json.loads(text) for text in texts), key=lambda d: -int(d.get("sequence") or 0)
        )
    sequences = [int(d["sequence"]) for d in documents]
    full = len(sequences) >= page_size
    if newer:
        newer_after = sequences[0] if full else (high if scan_bounded else None)
        older_before = sequences[-1] if sequences else (filters.after or 0) + 1
    else:
        older_before = sequences[-1] if full else (low if scan_bounded else None)
        newer_after = None
        if filters.before is not None:
            newer_after = sequences[0] if sequences else filters.before - 1
    if older_before is not None and older_before <= floor:
        older_before = None
    if newer_after is not None and newer_after >= ceiling:
        newer_after = None
    linked = check_linked(documents, _predecessor_hashes(group_id, sequences))
    lookup = lookup_for(group_id, documents)
    lines = tuple(
        Line(
            checked=event,
            words=event_words.describe(event.document, lookup),
            said=event_words.said(event.document),
            kind=event_words.kind(event.type),
            json=json.dumps(event.document, indent=2, ensure_ascii=False),
        )
        for event in linked.events
    )
    return Page(
        lines=lines,
        linked=linked,
        head_sequence=head,
        searched=searched,
        older_before=older_before,
        newer_after=newer_after,
        scan_bounded=scan_bounded,
        storage_problems=tuple(storage_problems(group_id, quick=True)),
        head_matches=_head_matches(group_id, log, documents),
    )


def _head_matches(group_id: str, log: GroupLog, documents: list[dict[str, Any]]) -> bool:
    """Whether the event at the head row's sequence carries the head row's hash: the check
    that catches the newest events cut away or rewritten, which no link between the events
    left can show. Read from the page when it holds the head, else one point read."""
    if log.head_sequence <= 0:
        return True
    shown = next((d for d in documents if d.get("sequence") == log.head_sequence), None)
    if shown is not None:
        return shown.get("hash") == log.head_hash
    text = (
        Event.objects.filter(group_id=group_id, sequence=log.head_sequence)
        .values_list("document", flat=True)
        .first()
    )
    return text is not None and json.loads(text).get("hash") == log.head_hash


def _predecessor_hashes(group_id: str, sequences: list[int]) -> dict[int, str]:
    """The served hash of each event just before one of the page's, where the page lacks it."""
    wanted = predecessors_needed(sequences)
    if not wanted:
        return {}
    return {
        sequence: str(json.loads(text).get("hash", ""))
        for sequence, text in Event.objects.filter(
            group_id=group_id, sequence__in=sorted(wanted)
        ).values_list("sequence", "document")
    }


def actor_choices(group_id: str) -> list[str]:
    """Who the "who" filter offers: every member the group has had, and the authority."""
    principals = (
        Membership.objects.filter(group_id=group_id)
        .order_by("principal")
        .values_list("principal", flat=True)
    )
    return [*dict.fromkeys(principals), "authority"]
