"""What the Agents and People screens share (issue 37 §3): a group's members shown as cards
that follow the log, on a page of them all and on one member's own page.

Each screen reads its own cards (``agents.cards``, ``people.cards``); this module only builds
the context their templates and their page scripts (``agents-page.js``, ``people-page.js``)
expect, so the two screens stay alike without one knowing the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apps.registry.models import Membership


def cards_context(
    membership: Membership, cards: Sequence[Any], refresh_url: str, *, single: bool = False
) -> dict[str, Any]:
    """The cards and where the page asks for them again; ``single``: one member's page,
    whose card is also ``card``."""
    context: dict[str, Any] = {
        "group": membership.group,
        "membership": membership,
        "cards": cards,
        "refresh_url": refresh_url,
    }
    if single:
        context.update(card=cards[0], single=True)
    return context


def live_stream(membership: Membership, head: int, families: Sequence[str]) -> dict[str, Any]:
    """What the page script subscribes to: the group after ``head`` (read before the
    projections, so no event between the two is missed), and the event families that change
    a card."""
    return {"group": membership.group_id, "head_sequence": head, "families": tuple(families)}
