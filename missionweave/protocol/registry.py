"""Every command the authority knows: who may issue it, its body check, the state it reads.

Adding a command (the WorkItem commands of wire.md §9 come next) is one ``CommandSpec`` here
plus its decide/evolve functions in a domain module; the write path does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import memberships, missions
from .facts import Command, Decision, StateKey, View


@dataclass(frozen=True, slots=True)
class CommandSpec:
    type: str
    #: group roles allowed to issue it (wire.md §9 "issued by")
    roles: frozenset[str]
    #: shape check of the body; raises MALFORMED / CONTRACT_INVALID (wire.md §3 step 9)
    validate: Callable[[dict[str, Any]], None]
    #: the state keys ``decide`` reads, loaded and locked by the write path
    keys: Callable[[dict[str, Any]], set[StateKey]]
    decide: Callable[[View, Command], Decision]
    #: only a human (``user:``) may issue it
    humans_only: bool = False
    #: an admin operation (staff API token) rather than a group-role command; not accepted at
    #: ``POST /groups/{g}/commands`` (wire.md §4: memberships are managed by admins)
    staff_only: bool = False


COMMANDS: dict[str, CommandSpec] = {
    spec.type: spec
    for spec in (
        CommandSpec(
            type=missions.CREATE,
            roles=frozenset({"mission_owner", "coordinator"}),
            validate=missions.validate_create,
            keys=missions.keys_of_create,
            decide=missions.decide_create,
        ),
        CommandSpec(
            type=memberships.GRANT,
            roles=frozenset(),
            validate=memberships.validate_grant,
            keys=memberships.keys_of_principal,
            decide=memberships.decide_grant,
            staff_only=True,
        ),
        CommandSpec(
            type=memberships.REVOKE,
            roles=frozenset(),
            validate=memberships.validate_revoke,
            keys=memberships.keys_of_principal,
            decide=memberships.decide_revoke,
            staff_only=True,
        ),
    )
}

#: the types an agent or human may send to ``POST /groups/{g}/commands``
PUBLIC_COMMAND_TYPES = frozenset(t for t, spec in COMMANDS.items() if not spec.staff_only)
