"""A group's verifiable export as it is served: the bytes ``manage.py export_group`` writes
and the dashboard's memberships screen lets admins download (R16-08, R16-10, R16-11).

The head is read and signed first: the events up to it never change afterwards, so the
export is consistent however long streaming it takes.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.utils import timezone

from missionweave.protocol.exports import export_lines, header_document
from missionweave.protocol.timefmt import format_timestamp

from . import authority
from .history import history
from .models import GroupLog


def group_export(group_id: str) -> tuple[GroupLog, Iterator[bytes]] | None:
    """The group's head row and its export as JSON Lines, or ``None`` for no such group."""
    log = GroupLog.objects.filter(group_id=group_id).first()
    if log is None:
        return None
    head = authority.signed_head(log)
    header = authority.signed(
        header_document(
            group=group_id,
            authority_id=authority.authority_id(),
            public_key=authority.public_key(),
            exported_at=format_timestamp(timezone.now()),
        )
    )
    return log, export_lines(header, history(group_id, through=log.head_sequence), head)
