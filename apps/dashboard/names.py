"""What a person reads for a principal: a name, never ``user:admin`` (issue 34 §6).

A page names the same few people and agents on many rows, so names are looked up once per
request: :class:`NameBookMiddleware` opens a book for the request, a view may ``prime`` it
with every principal it is about to show (one query per kind, however many rows), and each
``display_name`` after that is a dictionary read. Outside a request (a Celery task, a test
rendering a template) the book is a fresh one per call: correct, only not shared.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from apps.registry.models import AgentCard
from missionweave.middleware_modes import DualModeMiddleware
from missionweave.protocol.identifiers import AUTHORITY

#: the authority (wire.md §2) as people call it in a sentence
AUTHORITY_NAME = "the authority"

_book: ContextVar[dict[str, str] | None] = ContextVar("dashboard_name_book", default=None)


def _user_names(usernames: set[str]) -> dict[str, str]:
    users = get_user_model().objects.filter(username__in=usernames)
    names = {}
    for user in users.only("username", "first_name", "last_name"):
        full = user.get_full_name().strip()
        names[f"user:{user.username}"] = full or user.username
    return names


def _agent_names(agent_ids: set[str]) -> dict[str, str]:
    """The ``name`` of each agent's current card (the newest version wins, as in
    ``Agent.current_card``); an agent without a named card is called by its id."""
    names: dict[str, str] = {}
    # newest card first for each agent, the first one kept: DISTINCT ON would say it in one
    # clause, but the embedded default (SQLite) has none, and an agent has few cards
    cards = (
        AgentCard.objects.filter(agent_id__in=agent_ids)
        .order_by("agent_id", "-recorded_at", "-pk")
        .values_list("agent_id", "card")
    )
    newest: dict[str, object] = {}
    for agent_id, card in cards:
        newest.setdefault(agent_id, card)
    for agent_id, card in newest.items():
        name = card.get("name") if isinstance(card, dict) else None
        if isinstance(name, str) and name.strip():
            names[f"agent:{agent_id}"] = name.strip()
    return names


def _fallback(principal: str) -> str:
    """A principal nobody could name: the part after the kind (an unknown user's username,
    an agent's id), so the prefix never reaches the page."""
    if principal == AUTHORITY:
        return AUTHORITY_NAME
    _kind, sep, rest = principal.partition(":")
    return rest if sep and rest else principal


def _lookup(principals: set[str]) -> dict[str, str]:
    users = {p.removeprefix("user:") for p in principals if p.startswith("user:")}
    agents = {p.removeprefix("agent:") for p in principals if p.startswith("agent:")}
    found = {p: _fallback(p) for p in principals}
    if users:
        found |= _user_names(users)
    if agents:
        found |= _agent_names(agents)
    return found


def prime(principals: Iterable[object]) -> None:
    """Look up every principal a page is about to show in one query per kind."""
    book = _book.get()
    if book is None:
        return
    missing = {p for p in principals if isinstance(p, str) and p and p not in book}
    if missing:
        book.update(_lookup(missing))


def book(principals: Iterable[object]) -> dict[str, str]:
    """The names of ``principals``, for a page script that names what arrives live."""
    wanted = {p for p in principals if isinstance(p, str) and p}
    prime(wanted)
    return {principal: display_name(principal) for principal in sorted(wanted)}


def display_name(principal: object) -> str:
    """The name of ``principal``: a person's full name (or username), an agent card's
    ``name`` (or the agent's id), ``the authority``; anything else as it is."""
    if not isinstance(principal, str) or not principal:
        return "" if principal is None else str(principal)
    book = _book.get()
    if book is None:
        return _lookup({principal})[principal]
    if principal not in book:
        book.update(_lookup({principal}))
    return book[principal]


class NameBookMiddleware(DualModeMiddleware):
    """One name book per request (see the module docstring). The book is a dict the request's
    code mutates in place, so a view run in a worker thread (ASGI) fills the same book."""

    def call(self, request: HttpRequest) -> HttpResponseBase:
        token = _book.set({})
        try:
            return self.get_response(request)
        finally:
            _book.reset(token)

    async def acall(self, request: HttpRequest) -> HttpResponseBase:
        token = _book.set({})
        try:
            return await self.get_response(request)
        finally:
            _book.reset(token)
