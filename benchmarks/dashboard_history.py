"""A group's past, generated: clones of one finished mission, appended under the head lock.

A group with a million events is mostly history: missions long approved, their WorkItems
verified. The *template* is one such mission played through the write path (created by the
mission owner; three WorkItems, one gated by two owners' execution approval, a chain and a
fan-in of dependencies; each offered, accepted, started, reported, charged, submitted,
checked by the authority, reviewed by the human reviewer and accepted; then the mission
approved; and three more WorkItems of low, high and critical urgency authorised and dropped
before anyone was offered them, so the group holds six WorkItems per mission and its lists
have something to filter). Its events are then cloned as many times as the log needs: each
clone is the template's events with fresh identifiers (mission, WorkItems, offers, leases, commands,
events), the ``submission`` sequences they cite shifted with them, new times one
microsecond apart, and the hash chain computed by the protocol's :func:`event_hash`. The
clones share the template's input and report artifacts (many missions read the same
sources); their bytes are in the store.

**Projections.** Every cloned event is folded with ``decider.routes``/``decider.evolve`` —
the functions the write path projects with and ``rebuild_projections`` replays with — into
the clone's own aggregates (its mission and WorkItems, written once the clone is folded)
and the group's shared ones (the dependency graph, the shared artifacts' records, loaded
before and saved after). So the projection rows are what a replay of the log gives, and
``manage.py rebuild_projections --verify`` can check it.

What the clones lack: command records (idempotency rows), so a clone's command id is never
answered from them; and the template's signatures are its own (no clone re-signs anything:
the template publishes no manifest).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django.db import connection, transaction

from apps.ledger.models import Event, GroupLog
from apps.ledger.projections import ModelProjection, load_view, save_aggregates
from apps.work.models import Mission, WorkItem
from missionweave.protocol import decider
from missionweave.protocol.canonical import canonical_bytes, sha256_digest
from missionweave.protocol.events import event_hash
from missionweave.protocol.facts import Fact, StateKey
from missionweave.protocol.timefmt import format_timestamp

from .dashboard_cast import CO_OWNER, OWNER, Cast, as_person
from .dashboard_work import (
    Item,
    accept,
    accept_result,
    approve_execution,
    authorize,
    cancel,
    offer,
    report_progress,
    review,
    start,
    submit,
)

TEMPLATE_MISSION = "m-dash-tpl"
TEMPLATE_ITEM = "wi-dash-tpl-"
COPY_ROWS = 20_000
COPY_COLUMNS = "group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document"
#: every this many clones, one is checked against the protocol's canonical JSON and hash
CHECK_EVERY = 100
#: projection rows written per ``bulk_create``
ROWS_PER_INSERT = 2000
#: the only aggregates a clone owns (the rest of what it touches is the group's, shared)
OWN_KINDS: dict[str, ModelProjection] = {
    "mission": Mission.projection,
    "work_item": WorkItem.projection,
}


@dataclass(frozen=True)
class Template:
    """The template mission's events, ``first``..``last`` of the log."""

    first: int
    last: int
    events: tuple[dict[str, Any], ...]

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    @cached_property
    def approval_index(self) -> int:
        """Where the owner's final approval starts (an unapproved clone stops there)."""
        return max(i for i, e in enumerate(self.events) if e["type"] == "mission.approved")

    @cached_property
    def payloads(self) -> tuple[str, ...]:
        """Each event's payload as canonical JSON text, which every clone starts from."""
        return tuple(canonical_bytes(event["payload"]).decode("utf-8") for event in self.events)


def play_template(cast: Cast) -> Template:
    """The finished mission every clone copies, through the write path."""
    first = _head(cast.group) + 1
    body = {
        "mission": TEMPLATE_MISSION,
        "goal": "Summarise last quarter's support tickets",
        "budgets": {"money": 100.0, "tokens": 10_000_000},
    }
    as_person(cast, OWNER, "mission.create", body)
    workers = [w.principal for w in cast.workers]
    items = [
        Item(f"{TEMPLATE_ITEM}1", TEMPLATE_MISSION, "Collect the tickets", workers[0]),
        Item(
            f"{TEMPLATE_ITEM}2",
            TEMPLATE_MISSION,
            "Classify the tickets",
            workers[1 % len(workers)],
            gated=True,
            depends_on=(f"{TEMPLATE_ITEM}1",),
        ),
        Item(
            f"{TEMPLATE_ITEM}3",
            TEMPLATE_MISSION,
            "Write the quarterly summary",
            workers[2 % len(workers)],
            depends_on=(f"{TEMPLATE_ITEM}1", f"{TEMPLATE_ITEM}2"),
        ),
    ]
    for item in items:
        authorize(cast, item)
        offer(cast, item)
        accept(cast, item)
        if item.gated:
            approve_execution(cast, item, OWNER)
            approve_execution(cast, item, CO_OWNER)
        start(cast, item)
        report_progress(cast, item)
        submit(cast, item, with_manifest=False)
        review(cast, item)
        accept_result(cast, item)
    for number, urgency in enumerate(("low", "high", "critical"), start=len(items) + 1):
        dropped = Item(
            f"{TEMPLATE_ITEM}{number}",
            TEMPLATE_MISSION,
            f"Translate the summary ({urgency})",
            workers[0],
            urgency=urgency,
        )
        authorize(cast, dropped)
        cancel(cast, dropped)
    as_person(cast, OWNER, "mission.approve", {"mission": TEMPLATE_MISSION, "comment": "Done."})
    last = _head(cast.group)
    documents = (
        Event.objects.filter(group_id=cast.group, sequence__gte=first, sequence__lte=last)
        .order_by("sequence")
        .values_list("document", flat=True)
    )
    return Template(first, last, tuple(json.loads(text) for text in documents))


def _head(group: str) -> int:
    return GroupLog.objects.get(group_id=group).head_sequence


# --- cloning -----------------------------------------------------------------------------------

SUBMISSION = re.compile(r'"submission":(\d+)')


@dataclass(frozen=True)
class Clone:
    """One cloned event: its document as stored (canonical JSON, ``hash`` included), and the
    parts the fold and the COPY row need."""

    sequence: int
    type: str
    command_id: str
    actor: str
    event_id: str
    recorded_at: str
    payload: dict[str, Any]
    hash: str
    stored: str

    def as_wire(self) -> dict[str, Any]:
        return json.loads(self.stored)


def _replacements(template: Template, clone: int) -> list[tuple[str, str]]:
    """Text replacements that give clone ``clone`` its own identifiers (leases included)."""
    pairs = [(TEMPLATE_MISSION, f"m-past-{clone:06d}"), (TEMPLATE_ITEM, f"wi-past-{clone:06d}-")]
    for event in template.events:
        lease = event["payload"].get("lease")
        if isinstance(lease, dict) and "lease_id" in lease:
            pairs.append((lease["lease_id"], f"lease_past{clone:06d}x{len(pairs)}"))
    return pairs


def _text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def clone_events(
    template: Template,
    clone: int,
    *,
    after: int,
    prev_hash: str,
    start: datetime,
    unapproved: bool = False,
) -> Iterator[Clone]:
    """The template's events for clone ``clone``, chained after (``after``, ``prev_hash``);
    ``unapproved``: only up to the owner's final approval, a mission that waits for it (an
    entry in the mission owner's inbox).

    Built as text, ~20x faster than canonicalising each document: the template's payloads
    are already canonical (RFC 8785) as stored, replacing one identifier by another of the
    same alphabet keeps them so (no identifier is a key), and the envelope's keys are
    written in canonical order. :func:`check_canonical` proves it on a sample; the build's
    full verification re-hashes every event with the protocol's own :func:`event_hash`.
    """
    pairs = _replacements(template, clone)
    offset = after + 1 - template.first
    commands: dict[str, str] = {}

    def shifted(match: re.Match[str]) -> str:
        cited = int(match.group(1))
        inside = template.first <= cited <= template.last
        return f'"submission":{cited + offset if inside else cited}'

    events = zip(template.events, template.payloads, strict=True)
    for index, (source, canonical) in enumerate(events):
        if unapproved and index >= template.approval_index:
            return  # ready for final approval: every WorkItem ended, nobody approved it yet
        text = canonical
        for old, new in pairs:
            text = text.replace(old, new)
        text = SUBMISSION.sub(shifted, text)
        sequence = after + 1 + index
        command = commands.setdefault(source["command_id"], f"past-{clone:06d}-{len(commands)}")
        event_id = f"evt_{uuid.uuid4().hex}"
        recorded_at = format_timestamp(start + timedelta(microseconds=sequence))
        head = (
            f'{{"actor":{_text(source["actor"])},"command_id":{_text(command)},'
            f'"event_id":{_text(event_id)},"group":{_text(source["group"])},'
        )
        tail = (
            f'"payload":{text},"prev_hash":{_text(prev_hash)},'
            f'"recorded_at":{_text(recorded_at)},"sequence":{sequence},'
            f'"type":{_text(source["type"])}}}'
        )
        hash_ = sha256_digest((head + tail).encode("utf-8"))
        yield Clone(
            sequence=sequence,
            type=source["type"],
            command_id=command,
            actor=source["actor"],
            event_id=event_id,
            recorded_at=recorded_at,
            payload=json.loads(text),
            hash=hash_,
            stored=f'{head}"hash":{_text(hash_)},{tail}',
        )
        prev_hash = hash_


def check_canonical(event: Clone) -> None:
    """``event`` as stored is the canonical JSON of its document, and hashes as the protocol
    hashes it (a cloned event the text path got wrong stops the build here)."""
    document = event.as_wire()
    assert canonical_bytes(document).decode("utf-8") == event.stored, event.sequence
    assert event_hash(document) == event.hash, event.sequence


@dataclass
class Fold:
    """The aggregates the cloned events change: the group's shared ones, and the current
    clone's own (written and dropped once the clone is folded)."""

    group: str
    shared: dict[StateKey, Any] = field(default_factory=dict)
    #: the shared keys that already had a row before the clones
    existing: set[StateKey] = field(default_factory=set)
    own: dict[StateKey, Any] = field(default_factory=dict)
    marker: str = ""

    def apply(self, event: Clone) -> None:
        fact = Fact(
            event.type,
            event.payload,
            event.actor,
            event.sequence,
            event.command_id,
            event.recorded_at,
            self.group,
        )
        for key in decider.routes(fact):
            if self.marker in key[1]:
                assert key[0] in OWN_KINDS, key
                self.own[key] = decider.evolve(key, self.own.get(key), fact)
                continue
            if key not in self.shared:
                current = load_view(self.group, [key])[key]
                self.shared[key] = current
                if current is not None:
                    self.existing.add(key)
            self.shared[key] = decider.evolve(key, self.shared[key], fact)


def _copy(rows: list[tuple[Any, ...]]) -> None:
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: COPY is not in Django's cursor API
        with raw.copy(f"COPY ledger_event ({COPY_COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _row(group: str, event: Clone, recorded: datetime) -> tuple[Any, ...]:
    return (
        group,
        event.sequence,
        event.event_id,
        event.type,
        event.command_id,
        event.actor,
        recorded,
        event.hash,
        event.stored,
    )


def append_history(
    group: str,
    template: Template,
    *,
    first_clone: int,
    clones: int,
    log: Callable[[str], None],
    unapproved: bool = False,
) -> int:
    """Append ``clones`` clones of ``template`` (numbered from ``first_clone``) after the head,
    in one transaction holding the head row's lock as the write path does, with their
    projection rows; returns the number of events appended."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT head_sequence, head_hash, clock_timestamp() FROM ledger_grouplog "
                "WHERE group_id = %s FOR UPDATE",
                [group],
            )
            head, head_hash, now = cursor.fetchone()
        fold = Fold(group)
        rows: list[tuple[Any, ...]] = []
        pending: dict[StateKey, Any] = {}
        after, mark = head, time.perf_counter()
        for clone in range(first_clone, first_clone + clones):
            fold.own, fold.marker = {}, f"-past-{clone:06d}"
            for event in clone_events(
                template, clone, after=after, prev_hash=head_hash, start=now, unapproved=unapproved
            ):
                if clone % CHECK_EVERY == first_clone % CHECK_EVERY:
                    check_canonical(event)
                fold.apply(event)
                rows.append(_row(group, event, now + timedelta(microseconds=event.sequence)))
                after, head_hash = event.sequence, event.hash
            pending.update(fold.own)
            if len(rows) >= COPY_ROWS:
                _copy(rows)
                _bulk_insert(group, pending)
                rows, pending = [], {}
                done = after - head
                log(
                    f"dashboard history: {done:,} events, {clone - first_clone + 1:,} missions "
                    f"({done / (time.perf_counter() - mark):,.0f} events/s)"
                )
        if rows:
            _copy(rows)
            _bulk_insert(group, pending)
        save_aggregates(group, fold.shared, list(fold.shared), existing=fold.existing)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE ledger_grouplog SET head_sequence = %s, head_hash = %s WHERE group_id = %s",
                [after, head_hash, group],
            )
    return after - head


def _bulk_insert(group: str, aggregates: dict[StateKey, Any]) -> None:
    """New projection rows for the clones' own aggregates, a few statements per kind."""
    for kind, projection in OWN_KINDS.items():
        rows = [
            projection.model(
                group_id=group, **{projection.id_field: ident}, **projection.to_fields(aggregate)
            )
            for (k, ident), aggregate in aggregates.items()
            if k == kind
        ]
        projection.model.objects.bulk_create(rows, batch_size=ROWS_PER_INSERT)
