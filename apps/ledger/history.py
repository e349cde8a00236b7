"""The complete history of a group, in order, from wherever it is kept (R16-08).

History is never deleted: acknowledgements and archiving only move it. Events 1..F (F the
group's ``archived_through``) are in the archive, the later ones in the online log
(:mod:`apps.ledger.archive`). Everything that needs the whole log — ``manage.py
export_group``, ``rebuild_projections``, snapshots — reads it through :func:`history`, which
reads the archive and then the online log, so the readers never see where an event is kept.
"""

from __future__ import annotations

from collections.abc import Iterator

from .models import ArchivedEvent, Event
from .selectors import MAX_PAGE


def _page(group_id: str, *, after: int, through: int, limit: int) -> list[tuple[int, str]]:
    """The next ≤ ``limit`` (sequence, document) pairs after ``after``, from either store.

    Online first (the common case). If event ``after + 1`` is not online it is archived — an
    archive commits its copy and the online delete together, so a row missing from one
    statement's view of the online log is in the next statement's view of the archive, even
    when the archive ran between the two.
    """
    online = list(
        Event.objects.filter(group_id=group_id, sequence__gt=after, sequence__lte=through)
        .order_by("sequence")
        .values_list("sequence", "document")[:limit]
    )
    if online and online[0][0] == after + 1:
        return online
    return list(
        ArchivedEvent.objects.filter(group_id=group_id, sequence__gt=after, sequence__lte=through)
        .order_by("sequence")
        .values_list("sequence", "document")[:limit]
    )


def history(group_id: str, *, through: int, after: int = 0, page: int = MAX_PAGE) -> Iterator[str]:
    """The stored documents of events ``after``+1..``through`` of ``group_id``, in order.

    Keyset pages (``sequence > last``) of at most ``page`` rows, so a million events never sit
    in memory at once. Events at or below a head read earlier never change (the log is
    append-only; archiving moves rows unchanged), so no transaction has to stay open while
    the caller writes them out. ``LookupError`` if an event is in neither store.
    """
    while after < through:
        rows = _page(group_id, after=after, through=through, limit=page)
        if not rows or rows[0][0] != after + 1:
            raise LookupError(f"{group_id}: events {after + 1}..{through} are missing from the log")
        yield from (document for _, document in rows)
        after = rows[-1][0]
