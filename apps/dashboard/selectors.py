"""Reads behind the dashboard pages: a person's groups, a page of a log (work reads: ``work``).

Every group read is membership-checked by the caller of these functions (the views answer
404 to non-members, so a page never reveals that a group exists).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from apps.ledger.models import Event, GroupLog
from apps.ledger.storage_check import storage_problems
from apps.registry.models import Group, Membership
from missionweave.protocol.canonical import ZERO_HASH

from .timeline import CheckedPage, check_page

PAGE_SIZE = 50
_DIGITS = re.compile(r"[0-9]{1,18}")


def before_parameter(raw: str | None) -> int | None:
    """``?before=N`` of a page paged back by sequence (a positive integer), or ``None`` for
    the newest page; ``ValueError`` for anything else."""
    if raw is None or raw == "":
        return None
    if not _DIGITS.fullmatch(raw) or int(raw) < 1:
        raise ValueError("before is a positive integer")
    return int(raw)


@dataclass(frozen=True)
class GroupRow:
    group_id: str
    name: str
    roles: tuple[str, ...]
    head_sequence: int


def member_groups(principal: str) -> list[GroupRow]:
    """The groups where ``principal`` holds an active membership, by name."""
    rows = (
        Membership.objects.filter(principal=principal, active=True)
        .select_related("group", "group__log")
        .order_by("group__name", "group_id")
    )
    return [
        GroupRow(
            group_id=row.group_id,
            name=row.group.name,
            roles=tuple(row.roles),
            head_sequence=_head_sequence(row.group),
        )
        for row in rows
    ]


def all_groups(principal: str) -> list[GroupRow]:
    """Every group, by name, with ``principal``'s roles where it is a member: what staff see
    (they administer the memberships of any group, docs/dashboard.md "Memberships")."""
    roles = {
        row.group_id: tuple(row.roles)
        for row in Membership.objects.filter(principal=principal, active=True)
    }
    return [
        GroupRow(
            group_id=group.id,
            name=group.name,
            roles=roles.get(group.id, ()),
            head_sequence=_head_sequence(group),
        )
        for group in Group.objects.select_related("log").order_by("name", "id")
    ]


def _head_sequence(group: Any) -> int:
    log = getattr(group, "log", None)
    return log.head_sequence if log is not None else 0


def member_group(group_id: str, principal: str) -> Membership | None:
    """``principal``'s active membership of ``group_id`` (with the group), or ``None``."""
    return (
        Membership.objects.filter(group_id=group_id, principal=principal, active=True)
        .select_related("group")
        .first()
    )


@dataclass(frozen=True)
class TimelinePage:
    """One page of the log, newest first, with what the pager and the live script need."""

    checked: CheckedPage
    head_sequence: int
    head_hash: str
    #: sequences shown are < ``before``; ``head_sequence + 1`` on the newest page
    before: int
    page_size: int
    #: where the archive and the online log disagree (``apps.ledger.storage_check``)
    storage_problems: tuple[str, ...] = ()

    @property
    def is_newest(self) -> bool:
        return self.before > self.head_sequence

    @property
    def oldest_sequence(self) -> int | None:
        return self.checked.events[-1].sequence if self.checked.events else None

    @property
    def newest_sequence(self) -> int | None:
        return self.checked.events[0].sequence if self.checked.events else None

    @property
    def older_before(self) -> int | None:
        """``?before=`` of the next older page, if there is one."""
        oldest = self.oldest_sequence
        return oldest if isinstance(oldest, int) and oldest > 1 else None

    @property
    def has_newer(self) -> bool:
        return not self.is_newest

    @property
    def newer_before(self) -> int | None:
        """``?before=`` of the next newer page; ``None`` when that is the newest (no parameter)."""
        if self.is_newest:
            return None
        newer = self.before + self.page_size
        return newer if newer <= self.head_sequence else None

    @property
    def head_matches(self) -> bool | None:
        """On the newest page: does the newest event's hash equal the head row's hash?"""
        if not self.is_newest or not self.checked.events:
            return None
        return self.checked.events[0].hash == self.head_hash

    @property
    def verified(self) -> bool:
        """The page chains from its anchor and, when it holds the head, ends at the head."""
        return (
            self.checked.verified and self.head_matches is not False and not self.storage_problems
        )

    @property
    def documents_oldest_first(self) -> list[dict[str, Any]]:
        return [event.document for event in reversed(self.checked.events)]


def timeline_page(group_id: str, *, before: int | None, page_size: int = PAGE_SIZE) -> TimelinePage:
    """Events with sequence < ``before`` (all of them up to the head when ``None``), checked.

    The head is read first and the page never runs past it, like ``GET …/events``.
    """
    log = GroupLog.objects.get(group_id=group_id)
    head = log.head_sequence
    limit = head + 1 if before is None else min(before, head + 1)
    rows = list(
        Event.objects.filter(group_id=group_id, sequence__lt=limit)
        .order_by("-sequence")
        .values_list("document", flat=True)[:page_size]
    )
    documents = [json.loads(text) for text in reversed(rows)]
    anchor_sequence = documents[0]["sequence"] - 1 if documents else max(limit - 1, 0)
    checked = check_page(
        documents,
        anchor_sequence=anchor_sequence,
        anchor_hash=_hash_at(group_id, anchor_sequence),
    )
    problems = tuple(storage_problems(group_id, quick=True))
    return TimelinePage(checked, head, log.head_hash, limit, page_size, problems)


def _hash_at(group_id: str, sequence: int) -> str | None:
    """The hash of the event at ``sequence`` as served (zero before the first); ``None`` if gone."""
    if sequence <= 0:
        return ZERO_HASH
    text = (
        Event.objects.filter(group_id=group_id, sequence=sequence)
        .values_list("document", flat=True)
        .first()
    )
    return json.loads(text).get("hash") if text is not None else None


def timeline_head(group_id: str) -> int:
    """The group's head sequence: a live page subscribes after it."""
    head = GroupLog.objects.filter(group_id=group_id).values_list("head_sequence", flat=True)
    return head.first() or 0
