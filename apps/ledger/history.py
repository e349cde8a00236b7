"""The complete history of a group, in order, from wherever it is kept (R16-08).

History is never deleted: acknowledgements and (later) archiving only move it. Everything
that needs the whole log (``manage.py export_group``) reads it through :func:`history`, so an
archive source can be put in front of the online log here, in one place, without the readers
changing.
"""

from __future__ import annotations

from collections.abc import Iterator

from .selectors import MAX_PAGE, events_page


def history(group_id: str, *, through: int, page: int = MAX_PAGE) -> Iterator[str]:
    """The stored documents of events 1..``through`` of ``group_id``, in sequence order.

    Keyset pages (``sequence > last``) of at most ``page`` rows, so a million events never sit
    in memory at once. Events at or below a head read earlier never change (the log is
    append-only), so no transaction has to stay open while the caller writes them out.
    Today every event is in the online log; an archive source would yield its part first
    and hand over at its last sequence.
    """
    after = 0
    while after < through:
        batch = events_page(group_id, after=after, limit=page, head=through)
        if not batch.documents:
            raise LookupError(f"{group_id}: events {after + 1}..{through} are missing from the log")
        yield from batch.documents
        after = batch.next_after
