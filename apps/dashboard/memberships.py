"""Reads behind the memberships screen (issue 13 §1): who holds which roles, since when,
and the audit list of the group's membership events.

Membership changes are staff-only commands (``staff_only=True`` in the command table), so
the screen is for Django staff; the views check that before calling these reads.
The audit reads only the group's membership events, filtered by event type in the query and
paged by sequence: the log's other events are never loaded or parsed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from apps.ledger.models import Event
from apps.registry.models import Membership
from missionweave.protocol.identifiers import ROLES

from .presence import presence_of

MEMBERSHIP_EVENT_TYPES = ("membership.granted", "membership.changed", "membership.revoked")
AUDIT_PAGE_SIZE = 25


@dataclass(frozen=True)
class MemberRow:
    principal: str
    roles: tuple[str, ...]
    epoch: int
    #: when the current membership began (its latest ``membership.granted``)
    member_since: datetime | None
    #: when the roles were last set (its latest ``granted`` or ``changed``)
    roles_since: datetime | None
    #: an agent's latest Presence in words (R11.1-11), None for a person or a silent agent
    presence: str | None = None

    @property
    def technical(self) -> list[tuple[str, str]]:
        """The membership's epoch, for the collapsed technical details."""
        return [("membership epoch", str(self.epoch))]

    @property
    def role_choices(self) -> list[tuple[str, bool]]:
        """Every role with whether this member holds it, for the change-roles checkboxes."""
        return [(role, role in self.roles) for role in ROLES]


@dataclass(frozen=True)
class AuditEntry:
    sequence: int
    type: str
    actor: str
    recorded_at: datetime
    principal: str
    roles: tuple[str, ...]
    epoch: int

    @property
    def verb(self) -> str:
        return self.type.removeprefix("membership.")

    @property
    def technical(self) -> list[tuple[str, str]]:
        """The event's raw terms, for the collapsed technical details."""
        return [
            ("event", self.type),
            ("by", self.actor),
            ("principal", self.principal),
            ("membership epoch", str(self.epoch)),
        ]


@dataclass(frozen=True)
class AuditPage:
    entries: list[AuditEntry]
    #: ``?before=`` of the next (older) page, or ``None`` on the last one
    older_before: int | None


def _entry(sequence: int, actor: str, recorded_at: datetime, document: str) -> AuditEntry:
    event = json.loads(document)
    payload = event.get("payload", {})
    return AuditEntry(
        sequence=sequence,
        type=event["type"],
        actor=actor,
        recorded_at=recorded_at,
        principal=payload.get("principal", ""),
        roles=tuple(payload.get("roles", ())),
        epoch=int(payload.get("epoch", 0)),
    )


def audit_page(group_id: str, *, before: int | None = None) -> AuditPage:
    """One page of the group's membership events, newest first (sequences < ``before``)."""
    rows = Event.objects.filter(group_id=group_id, type__in=MEMBERSHIP_EVENT_TYPES)
    if before is not None:
        rows = rows.filter(sequence__lt=before)
    found = list(
        rows.order_by("-sequence").values_list("sequence", "actor", "recorded_at", "document")[
            : AUDIT_PAGE_SIZE + 1
        ]
    )
    entries = [_entry(*row) for row in found[:AUDIT_PAGE_SIZE]]
    older = entries[-1].sequence if len(found) > AUDIT_PAGE_SIZE else None
    return AuditPage(entries=entries, older_before=older)


def member(group_id: str, principal: str) -> MemberRow | None:
    """One active member of the group (the revoke confirmation names their roles)."""
    return next(iter(members(group_id, only=principal)), None)


def members(group_id: str, *, only: str | None = None) -> list[MemberRow]:
    """The active members (or the one ``only`` names) with their roles and epochs (the
    projection) and since when (the times of their membership events)."""
    active = Membership.objects.filter(group_id=group_id, active=True)
    if only is not None:
        active = active.filter(principal=only)
    rows = list(active.order_by("principal"))
    since: dict[str, datetime] = {}
    roles_since: dict[str, datetime] = {}
    events = (
        Event.objects.filter(
            group_id=group_id, type__in=("membership.granted", "membership.changed")
        )
        .order_by("-sequence")
        .values_list("sequence", "actor", "recorded_at", "document")
    )
    wanted = {row.principal for row in rows}
    if not wanted:
        return []
    for row in events.iterator():
        entry = _entry(*row)
        if entry.principal not in wanted:
            continue
        roles_since.setdefault(entry.principal, entry.recorded_at)
        if entry.type == "membership.granted":
            since.setdefault(entry.principal, entry.recorded_at)
        if len(since) == len(wanted):
            break
    presence = presence_of(wanted)
    return [
        MemberRow(
            principal=row.principal,
            roles=tuple(row.roles),
            epoch=row.epoch,
            member_since=since.get(row.principal),
            roles_since=roles_since.get(row.principal),
            presence=presence.get(row.principal),
        )
        for row in rows
    ]
