"""The names and titles a page's events mention, read once (``event_words``'s lookup).

One query per kind of principal (``names.book``), one for the WorkItems' goals (the
projection's ``title`` column) and one for the missions' goals, however many events the page
shows (issue 37 §2).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from apps.ledger.models import Event
from apps.work.models import Mission, WorkItem
from missionweave.protocol.work.checks import approvals_required

from . import names
from .event_words import TableLookup, describe, subjects


def lookup_for(
    group_id: str, documents: Iterable[Mapping[str, Any]], *, here: str | None = None
) -> TableLookup:
    """A lookup naming everyone and everything ``documents`` mention, in ``group_id``;
    ``here``, the WorkItem whose page lists them, is "this WorkItem"."""
    documents = list(documents)
    found = subjects(documents)
    work_items = (
        dict(
            WorkItem.objects.filter(group_id=group_id, work_item_id__in=found.work_items)
            .values_list("work_item_id", "title")
            .order_by()
        )
        if found.work_items
        else {}
    )
    missions = (
        dict(
            Mission.objects.filter(group_id=group_id, mission_id__in=found.missions)
            .values_list("mission_id", "goal")
            .order_by()
        )
        if found.missions
        else {}
    )
    return TableLookup(
        names=names.book(found.principals),
        work_items=work_items,
        missions=missions,
        approvals=_approval_counts(group_id, documents),
        here=here,
    )


def _approval_counts(
    group_id: str, documents: list[Mapping[str, Any]]
) -> dict[int, tuple[int, int]]:
    """Each execution grant's rank among its revision's grants and how many that revision
    needs, from the items' kept decisions (``approval_log``; one query for the page)."""
    grants = {
        d.get("sequence"): (d.get("payload") or {}).get("work_item")
        for d in documents
        if d.get("type") == "approval.execution_granted"
    }
    if not grants:
        return {}
    counts: dict[int, tuple[int, int]] = {}
    rows = WorkItem.objects.filter(group_id=group_id, work_item_id__in=set(grants.values()))
    for row in rows:
        item = row.to_state()
        needed = approvals_required(item)
        granted = [
            entry
            for entry in item.approval_log
            if entry.get("decision") == "granted" and entry.get("revision") == item.revision
        ]
        for rank, entry in enumerate(sorted(granted, key=lambda e: e.get("sequence", 0)), 1):
            if needed and grants.get(entry.get("sequence")) == item.id:
                counts[entry["sequence"]] = (rank, needed)
    return counts


def words_for(
    group_id: str, documents: Mapping[int, Mapping[str, Any]], *, here: str | None = None
) -> dict[int, str]:
    """Each event's sentence, by sequence (a card that lists a few events: the WorkItem's
    History, where its own WorkItem is ``here``; the mission's Latest events)."""
    lookup = lookup_for(group_id, documents.values(), here=here)
    return {sequence: describe(document, lookup) for sequence, document in documents.items()}


def words_at(group_id: str, sequences: Iterable[int]) -> dict[int, str]:
    """:func:`words_for` the events at ``sequences``, read in one query by the unique index."""
    wanted = sorted(set(sequences))
    if not wanted:
        return {}
    documents = {
        sequence: json.loads(text)
        for sequence, text in Event.objects.filter(
            group_id=group_id, sequence__in=wanted
        ).values_list("sequence", "document")
    }
    return words_for(group_id, documents)
