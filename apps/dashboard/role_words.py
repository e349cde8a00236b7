"""Roles and who may act, in words (issue 34 §6, issue 36 §5; wire.md §9).

Every screen that says why a person may not do something names the roles the command table
allows and the roles the person holds; they all say them the same way because they all say
them from here. The roles themselves are the command table's (``COMMANDS``), the very roles
the write path checks: this module never decides, it only words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from missionweave.protocol.commands import COMMANDS

#: role -> (one holder, several holders)
ROLE_NAMES = {
    "admin": ("an admin", "admins"),
    "mission_owner": ("a mission owner", "mission owners"),
    "coordinator": ("a coordinator", "coordinators"),
    "worker": ("a worker", "workers"),
    "reviewer": ("a reviewer", "reviewers"),
    "observer": ("an observer", "observers"),
}


def one_holder(role: str) -> str:
    """ "a mission owner" (a role the table does not name is said as it is)."""
    return ROLE_NAMES.get(role, (f"a {role.replace('_', ' ')}", ""))[0]


def holders(role: str) -> str:
    """ "mission owners" (a role the table does not name is said as it is)."""
    return ROLE_NAMES.get(role, ("", role.replace("_", " ") + "s"))[1]


def words(parts: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def who_can(command: str, doing: str, roles: Iterable[str]) -> str:
    """ "Only coordinators add WorkItems; you are a mission owner.", from the command table's
    roles (wire.md §9): the very roles the write path checks."""
    allowed = words([holders(role) for role in sorted(COMMANDS[command].roles)])
    held = words([one_holder(role) for role in roles])
    return f"Only {allowed} {doing}; you are {held or 'not a member'}."
