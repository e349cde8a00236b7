"""Reads of the mission, WorkItem and context package projections."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from missionweave.protocol.context import ContextPackage as ContextPackageState
from missionweave.protocol.context import context_key
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .models import ContextPackage, Mission, WorkItem


def mission_document(group_id: str, mission_id: str) -> dict[str, Any]:
    row = Mission.objects.filter(group_id=group_id, mission_id=mission_id).first()
    if row is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"no mission {mission_id!r} in {group_id}", requirement="wire§4"
        )
    return row.to_state().as_dict()


def work_item_document(group_id: str, work_item_id: str) -> dict[str, Any]:
    row = WorkItem.objects.filter(group_id=group_id, work_item_id=work_item_id).first()
    if row is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"no WorkItem {work_item_id!r} in {group_id}", requirement="wire§4"
        )
    return row.data


def context_package(
    group_id: str, package_id: str, from_group: str | None = None
) -> ContextPackageState:
    """A package published in ``group_id``, or received there from ``from_group``."""
    _, key = context_key(package_id, from_group)
    row = ContextPackage.objects.filter(group_id=group_id, package_id=key).first()
    if row is None:
        where = "" if from_group is None else f" from {from_group}"
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no context package {package_id!r}{where} in {group_id}",
            requirement="wire§4",
        )
    return ContextPackageState.from_dict(row.data)


def context_packages(
    group_id: str,
    *,
    mission: str | None = None,
    work_item: str | None = None,
    after: str = "",
    limit: int = 100,
) -> tuple[list[ContextPackageState], str | None]:
    """The packages recorded in ``group_id`` after the key ``after`` in key order (a received
    one's key is ``<from_group>/<id>``), at most ``limit``, those in the context of
    ``mission`` / ``work_item`` only when given (``ContextPackage.in_context_of``); and the key
    to continue after, or ``None`` when none is left.

    The scope is read from each package's latest version, so the rows are filtered here
    rather than in SQL: a group holds packages by the mission, not by the million."""
    rows = ContextPackage.objects.filter(group_id=group_id, package_id__gt=after).order_by(
        "package_id"
    )
    found: list[ContextPackageState] = []
    last = None
    for key, data in rows.values_list("package_id", "data").iterator(chunk_size=200):
        if len(found) == limit:
            return found, last
        package = ContextPackageState.from_dict(data)
        last = key
        if package.in_context_of(mission, work_item):
            found.append(package)
    return found, None


def in_groups(keys: Iterable[tuple[str, str]], field: str) -> Q:
    """Rows named by ``(group, id)`` pairs, ``id`` in ``field`` (``mission_id``,
    ``work_item_id``, ``mission``): one filter for subjects spread over several groups, as
    a page of notifications or a WorkItem's child missions name them."""
    wanted = Q(pk__in=[])
    for group, subject in sorted(set(keys)):
        wanted |= Q(group_id=group, **{field: subject})
    return wanted
