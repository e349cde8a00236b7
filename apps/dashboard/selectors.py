"""Reads behind the dashboard pages: a person's groups and a group's head (work reads: ``work``).

Every group read is membership-checked by the caller of these functions (the views answer
404 to non-members, so a page never reveals that a group exists).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from apps.ledger.models import GroupLog
from apps.registry.models import Group, Membership
from apps.work.models import Mission

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


def timeline_head(group_id: str) -> int:
    """The group's head sequence: a live page subscribes after it."""
    head = GroupLog.objects.filter(group_id=group_id).values_list("head_sequence", flat=True)
    return head.first() or 0


def mission_goal(group_id: str, mission_id: str) -> str | None:
    """The goal of ``mission_id`` (``None`` when the group has no such mission): what a page's
    breadcrumb names a mission by, since people know missions by their goals."""
    rows = Mission.objects.filter(group_id=group_id, mission_id=mission_id)
    return rows.values_list("goal", flat=True).first()
