"""Reads of the log: pages of events, the head, membership-checked access to a group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import membership_key

from . import agents
from .archive import cursor_too_old
from .head import committed_head, no_such_group
from .models import GroupLog
from .projections import load_view, view_reads
from .reads import Read, run_together
from .statements import current, hot_cursor

MAX_PAGE = 1000
DEFAULT_PAGE = 100
# every replay and catch-up reads pages through this one statement: bound on the server
# (``hot_cursor``), where the ORM compiled a queryset per page
_EVENTS_PAGE = (
    "SELECT sequence, document FROM ledger_event WHERE group_id = %s "
    "AND sequence > %s AND sequence <= %s ORDER BY sequence LIMIT %s"
)


def clamped_limit(limit: int) -> int:
    """A page's ``limit`` as served: at least 1, at most ``MAX_PAGE`` (wire.md §4)."""
    return max(1, min(limit, MAX_PAGE))


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


def spliced(prefix: str, documents: list[str], suffix: str) -> str:
    """``prefix``, the ``documents`` joined by commas, ``suffix``: a page's JSON array in
    its frame or body, the stored documents spliced in, never decoded. One join copies the
    page once (a page is ~650 KB: every copy of it shows in a replay's CPU)."""
    if not documents:
        return prefix + suffix
    parts = list(documents)
    parts[0] = prefix + parts[0]
    parts[-1] = parts[-1] + suffix
    return ",".join(parts)


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
    limit = clamped_limit(limit)
    with hot_cursor() as cursor:  # parameters bound on the server
        cursor.execute(_EVENTS_PAGE, [group_id, after, head, limit])
        rows = cursor.fetchall()
    if after < head and (not rows or rows[0][0] != after + 1):
        raise cursor_too_old(group_id, after)
    next_after = rows[-1][0] if rows else after
    return EventPage([document for _, document in rows], head, next_after)


# The head and the page in one statement, so in one snapshot: every event up to the head it
# reports is visible in it (the writer commits both together), none past it is served.
# (Joining the documents in PostgreSQL with string_agg measured ~10 % slower for a reader,
# 7.5–7.8 s against 6.8–7.1 s per million events, interleaved: benchmarks section 8.)
_HEAD_AND_PAGE = (
    "SELECT h.head_sequence, e.sequence, e.document FROM ledger_grouplog h "
    "LEFT JOIN LATERAL (SELECT sequence, document FROM ledger_event "
    "WHERE group_id = h.group_id AND sequence > %s AND sequence <= h.head_sequence "
    "ORDER BY sequence LIMIT %s) e ON true WHERE h.group_id = %s"
)
_HEAD = "SELECT head_sequence FROM ledger_grouplog WHERE group_id = %s"


def readable_page(
    group_id: str,
    principal: str,
    *,
    after: int,
    limit: int,
    session: tuple[str, int] | None = None,
) -> EventPage:
    """``GET …/events`` for ``principal``: the group, its membership check and the page,
    on PostgreSQL in one round trip (``_member_head_page``).

    ``session`` (agent id, epoch) also checks, in the same round trip, that the epoch is
    still the agent's current one (``STALE_SESSION``, R11.3-10): the command edge passes it
    when it judged the token from memory (``apps/api/edge.py``). Refusals come in the order
    ``access_group`` and ``events_page`` give them."""
    membership, head, page = _member_head_page(group_id, principal, after, limit, session)
    if head is None:
        raise no_such_group(group_id)
    if membership is None or not membership.active:
        raise ProtocolError(
            ErrorCode.NOT_A_MEMBER,
            f"{principal} is not a member of {group_id}",
            requirement="wire§2",
        )
    return page()


def member_page(group_id: str, principal: str, *, after: int, limit: int) -> EventPage | None:
    """A stream's next read (wire.md §7): the events after ``after`` up to the committed
    head, or ``None`` when ``principal`` is no longer a member; in one round trip on
    PostgreSQL; ``CURSOR_TOO_OLD`` below the online floor, as ``events_page``."""
    membership, head, page = _member_head_page(group_id, principal, after, limit, None)
    if head is None or membership is None or not membership.active:
        return None
    return page()  # at or past the head: no event, next_after = after


def _member_head_page(
    group_id: str, principal: str, after: int, limit: int, session: tuple[str, int] | None
) -> tuple[Any, int | None, Callable[[], EventPage]]:
    """(the principal's membership, the head or ``None`` for no such group, the page): the
    membership row and the head with its page sent together, so one round trip on
    PostgreSQL; elsewhere the head, then the page. The page is only built when asked for,
    after the caller's checks, and raises ``CURSOR_TOO_OLD`` below the online floor."""
    limit = clamped_limit(limit)
    key = membership_key(principal)
    postgresql = current().vendor == "postgresql"
    reads: list[Read[Any]] = [
        *view_reads(group_id, [key]),
        Read(_HEAD_AND_PAGE, [after, limit, group_id], lambda rows: rows or None)
        if postgresql
        else Read(_HEAD, [group_id], lambda rows: rows[0] if rows else None),
    ]
    if session is not None:
        reads.append(agents.directory().standing_read(session[0]))
    memberships, head_row, *standing = run_together(reads)
    if session is not None:
        current_epoch = standing[0].session_epoch if standing[0] is not None else None
        if current_epoch != session[1]:
            raise ProtocolError(
                ErrorCode.STALE_SESSION,
                "this session was replaced by a newer one",
                requirement="R11.3-10",
            )
    if head_row is None:  # the head row, or on PostgreSQL the rows of head and page
        return memberships.get(key), None, _no_page
    if not postgresql:
        head = int(head_row[0])
        return (
            memberships.get(key),
            head,
            partial(events_page, group_id, after=after, limit=limit, head=head),
        )
    head = int(head_row[0][0])

    def page() -> EventPage:
        # No event after ``after``: one row, the head's, with NULLs from the lateral join.
        first, last = head_row[0][1], head_row[-1][1]
        if after < head and first != after + 1:
            raise cursor_too_old(group_id, after)
        if first is None:
            return EventPage([], head, after)
        return EventPage([document for _, _, document in head_row], head, last)

    return memberships.get(key), head, page


def _no_page() -> EventPage:
    raise AssertionError("no page of a group that does not exist")


def visible_page(group_id: str, *, after: int, limit: int) -> tuple[int, list[str]]:
    """(committed head, the next page of events after ``after`` up to it): the head is read
    first, so nothing past a sequence that is not yet visible is ever served (R16-05);
    ``CURSOR_TOO_OLD`` below the online floor, as ``events_page``."""
    head = committed_head(group_id) or 0
    if head <= after:
        return head, []
    return head, events_page(group_id, after=after, limit=limit, head=head).documents
