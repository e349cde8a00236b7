"""Hints after commit: apps that react to an appended event type learn of it at once.

A reaction is only a hint: it enqueues work (a Celery task) that a periodic sweep would also
find, so a lost hint delays nothing but latency and a doubled one changes nothing. It runs
after the transaction commits, never inside it, and a failing hint is logged, not raised:
the command it follows has been accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

logger = logging.getLogger(__name__)

#: ``(group_id, event document)``
Reaction = Callable[[str, dict[str, Any]], None]

_reactions: dict[str, list[Reaction]] = {}


def react_to(event_type: str, reaction: Reaction) -> None:
    """Run ``reaction`` after the commit of every appended ``event_type`` (once per
    registration: an app registers from its ``ready()``)."""
    registered = _reactions.setdefault(event_type, [])
    if reaction not in registered:
        registered.append(reaction)


def wanted(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events some app reacts to."""
    return [event for event in events if event["type"] in _reactions]


def run(group_id: str, events: Iterable[dict[str, Any]]) -> None:
    for event in events:
        for reaction in _reactions.get(event["type"], ()):
            try:
                reaction(group_id, event)
            except Exception:  # a hint: the periodic sweep does the same work later
                logger.exception("reaction to %s in %s failed", event["type"], group_id)
