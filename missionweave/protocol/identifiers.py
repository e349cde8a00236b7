"""Identifier and principal syntax (wire.md §1, §2)."""

from __future__ import annotations

import re

# ``\Z``, not ``$``: ``$`` also matches before a trailing newline, so "m-1\n" would pass as an id
ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}\Z")
USERNAME_PATTERN = re.compile(r"^[\w.@+-]{1,150}\Z", re.ASCII)
AUTHORITY = "authority"

ROLES = ("admin", "mission_owner", "coordinator", "worker", "reviewer", "observer")


def is_id(value: object) -> bool:
    """A client-chosen id: 1..128 characters of ``[A-Za-z0-9._:-]``."""
    return isinstance(value, str) and ID_PATTERN.match(value) is not None


def parse_principal(value: object) -> tuple[str, str]:
    """Split ``agent:<id>`` or ``user:<username>`` into (kind, name); ``ValueError`` otherwise."""
    if not isinstance(value, str):
        raise ValueError("a principal is a string")
    kind, sep, name = value.partition(":")
    if sep and kind == "agent" and is_id(name):
        return kind, name
    if sep and kind == "user" and USERNAME_PATTERN.match(name):
        return kind, name
    raise ValueError("a principal is agent:<agent_id> or user:<username>")


def is_principal(value: object) -> bool:
    try:
        parse_principal(value)
    except ValueError:
        return False
    return True


def agent_principal(agent_id: str) -> str:
    """The principal of an agent (wire.md §2): the one place ``agent:`` is written."""
    return f"agent:{agent_id}"


def user_principal(username: str) -> str:
    """The principal of a person (wire.md §2): the one place ``user:`` is written."""
    return f"user:{username}"


def username_of(principal: str) -> str:
    """The username of a ``user:`` principal (``ValueError`` for any other principal)."""
    kind, name = parse_principal(principal)
    if kind != "user":
        raise ValueError(f"{principal!r} is not a person")
    return name


def is_agent(principal: str) -> bool:
    """Whether ``principal`` is an agent (``agent:``), whose commands are signed (wire.md §3)."""
    return principal.startswith("agent:")


def is_human(principal: str) -> bool:
    """Whether ``principal`` is a person (``user:``), whose commands are unsigned (wire.md §3)."""
    return principal.startswith("user:")
