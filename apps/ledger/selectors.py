"""Reads of the log: pages of events, the head, membership-checked access to a group."""

from __future__ import annotations

from dataclasses import dataclass

from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import membership_key

from .archive import cursor_too_old
from .head import committed_head, no_such_group
from .models import GroupLog
from .projections import load_view
from .statements import hot_cursor

MAX_PAGE = 1000
DEFAULT_PAGE = 100
# every replay and catch-up reads pages through this one statement: bound on the server
# (``hot_cursor``), where the ORM compiled a queryset per page
_EVENTS_PAGE = (
    "SELECT sequence, document FROM ledger_event WHERE group_id = %s "
    "AND sequence > %s AND sequence <= %s ORDER BY sequence LIMIT %s"
)


def group_log(group_id: str) -> GroupLog:
    log = GroupLog.objects.filter(group_id=group_id).first()
    if log is None:
        raise no_such_group(group_id)
    return log


def access_group(group_id: str, principal: str) -> GroupLog:
    """The group's head row, if ``principal`` is an active member (any role, observer too)."""
    log = group_log(group_id)
    key = membership_key(principal)
    membership = load_view(group_id, [key])[key]
    if membership is None or not membership.active:
        raise ProtocolError(
            ErrorCode.NOT_A_MEMBER,
            f"{principal} is not a member of {group_id}",
            requirement="wire§2",
        )
    return log


@dataclass(frozen=True)
class EventPage:
    documents: list[str]  # canonical JSON of each event, as stored and hashed
    head: int
    next_after: int


def events_page(group_id: str, *, after: int, limit: int, head: int) -> EventPage:
    """Events with sequence > ``after`` in order (wire.md §4 ``GET …/events``).

    ``head`` is read before the page, so a page never runs past the head it reports.
    Only the online log is served: when event ``after + 1`` (≤ head) is not in it, it was
    archived — before or during this read, the move being atomic — and the reader gets
    ``CURSOR_TOO_OLD`` with the snapshot to restore instead (wire.md §4, §7; R16-10).
    """
    limit = max(1, min(limit, MAX_PAGE))
    with hot_cursor() as cursor:  # a fixed statement: prepared after a few pages
        cursor.execute(_EVENTS_PAGE, [group_id, after, head, limit])
        rows = cursor.fetchall()
    if after < head and (not rows or rows[0][0] != after + 1):
        raise cursor_too_old(group_id, after)
    next_after = rows[-1][0] if rows else after
    return EventPage([document for _, document in rows], head, next_after)


def visible_page(group_id: str, *, after: int, limit: int) -> tuple[int, list[str]]:
    """(committed head, the next page of events after ``after`` up to it): the head is read
    first, so nothing past a sequence that is not yet visible is ever served (R16-05);
    ``CURSOR_TOO_OLD`` below the online floor, as ``events_page``."""
    head = committed_head(group_id) or 0
    if head <= after:
        return head, []
    return head, events_page(group_id, after=after, limit=limit, head=head).documents
