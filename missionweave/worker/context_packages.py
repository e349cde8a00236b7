"""The context packages a handler is handed (R13.3-01..03, R13.3-05; issue 35 §7).

When an item starts, the runtime reads the packages of its mission
(``GET /groups/{g}/contexts?mission=…``) and puts each one's latest version in the slot's
mission context, read-only: the handler finds them as ``ctx.context_packages``, each a mapping
of

``id``, ``version``, ``digest``, ``mission``, ``work_items``, ``event_range``, ``artifacts``,
``decisions``, ``constraints``, ``open_questions``, ``generator``, ``created_at``, and
``names_this_item`` (whether the package's WorkItem scope names the item being run).

Only packages published in the item's own group for its own mission are handed: a package
forwarded from another group summarises that group's mission and enters no mission context
here (R13.3-05), and another mission's packages are not this item's business. A package is a
summary, never the history (R13.3-01): ``event_range`` and ``artifacts`` say where the facts
are, for a handler whose agent may read them (R13.3-03).

Reading them never stops an item: the packages are context, not inputs (the contract's
``inputs`` are). When the authority cannot be reached or refuses the read, the handler gets
none and ``ctx.mission_context["context_packages_missing"]`` says why.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from missionweave.client.errors import ApiError

from .link import Link, Offline
from .slots import Assignment

log = logging.getLogger("missionweave.worker")

#: where the mission context holds the handed packages, and why none could be read
PACKAGES = "context_packages"
MISSING = "context_packages_missing"
#: what a handler is told of each package: its latest version's fields
FIELDS = (
    "id", "version", "mission", "work_items", "event_range", "artifacts", "decisions",
    "constraints", "open_questions", "generator", "created_at",
)  # fmt: skip


def with_packages(assignment: Assignment, link: Link) -> Assignment:
    """``assignment`` with its mission's packages in the context (module doc)."""
    try:
        packages = read(link, assignment.group, assignment.mission, assignment.work_item)
    except (Offline, ApiError) as error:
        log.warning("context packages of %s not read: %s", assignment.work_item, error)
        return replace(
            assignment, context={**assignment.context, PACKAGES: (), MISSING: str(error)}
        )
    return replace(assignment, context={**assignment.context, PACKAGES: packages})


def read(link: Link, group: str, mission: str, work_item: str) -> tuple[dict[str, Any], ...]:
    """The latest version of each package in ``mission``'s context, in id order, every page."""
    if not mission:
        return ()
    params: dict[str, Any] = {"mission": mission, "limit": 1000}
    handed: list[dict[str, Any]] = []
    while True:
        page = link.read(f"/groups/{group}/contexts", params)
        handed.extend(_handed(entry, work_item) for entry in page["packages"])
        if page.get("next_after") is None:
            return tuple(handed)
        params = {**params, "after": page["next_after"]}


def _handed(entry: dict[str, Any], work_item: str) -> dict[str, Any]:
    package = entry["latest"]["package"]
    return {
        **{name: package[name] for name in FIELDS},
        "digest": entry["latest"]["digest"],
        "names_this_item": work_item in package["work_items"],
    }
