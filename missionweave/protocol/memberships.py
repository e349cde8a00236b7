"""Memberships: who holds which roles in a group, and the membership epoch (wire.md §2).

Membership changes are admin commands (``membership.grant``, ``membership.revoke``) that
append ``membership.granted`` / ``membership.changed`` / ``membership.revoked``. The epoch is
per (group, principal): 1 when first granted, +1 on every change, and it survives a revoke so
that a later grant continues from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ErrorCode, ProtocolError
from .evolvers import REGISTRY, evolves
from .facts import Command, Decision, Fact, NewEvent, StateKey, View
from .frozen import replace
from .identifiers import ROLES
from .validation import check_fields, check_principal, malformed
from .work.items import WorkItem, work_item_key
from .work.leases import fenced_by_revocation, revocation_events

GRANT = "membership.grant"
REVOKE = "membership.revoke"
#: the group role that may change memberships besides staff (wire.md §2, changed 2026-12-07)
ADMINISTERS = frozenset({"admin"})


@dataclass(frozen=True, slots=True)
class Membership:
    principal: str
    roles: tuple[str, ...]
    epoch: int
    active: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "principal": self.principal,
            "roles": list(self.roles),
            "epoch": self.epoch,
            "active": self.active,
        }


def membership_key(principal: str) -> StateKey:
    return ("membership", principal)


def current_epoch(membership: Membership | None) -> int:
    """The membership epoch a member's next command carries (wire.md §2): its current one, or
    0 without an active membership, which the authority answers NOT_A_MEMBER."""
    return membership.epoch if membership is not None and membership.active else 0


def check_roles(value: object, path: str = "$.roles") -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise malformed("roles is a non-empty list", path, "wire§2")
    for index, role in enumerate(value):
        if role not in ROLES:
            raise malformed(
                f"unknown role, expected one of {list(ROLES)}", f"{path}[{index}]", "wire§2"
            )
    if len(set(value)) != len(value):
        raise malformed("roles are listed once each", path, "wire§2")
    return tuple(sorted(value))


def validate_grant(body: dict[str, Any]) -> None:
    check_fields(body, required=("principal", "roles"))
    check_principal(body["principal"], "$.principal")
    check_roles(body["roles"])


def validate_revoke(body: dict[str, Any]) -> None:
    check_fields(body, required=("principal",))
    check_principal(body["principal"], "$.principal")


def owned_items_key(principal: str) -> StateKey:
    """The ids of the WorkItems ``principal`` owns in the group (active or queued), ascending.

    Not an aggregate of the log but a query of the WorkItem projection (its ``owner`` and
    ``state`` columns), which the write path answers; the decision re-checks every item it
    names, so the list only says which items to load."""
    return ("owned_items", principal)


def keys_of_principal(command: Command, view: View) -> set[StateKey]:
    return {membership_key(command.body["principal"])}


def keys_of_revoke(command: Command, view: View) -> set[StateKey]:
    """The membership, the member's owned items, then (second round) those items: a
    revocation fences them in the same transaction (wire.md §4, R11.5-01)."""
    principal = command.body["principal"]
    keys = {membership_key(principal), owned_items_key(principal)}
    keys.update(work_item_key(ident) for ident in view.get(owned_items_key(principal)) or ())
    return keys


def decide_grant(view: View, command: Command) -> Decision:
    principal = command.body["principal"]
    roles = check_roles(command.body["roles"])
    current: Membership | None = view.get(membership_key(principal))
    if current is not None and current.active and tuple(sorted(current.roles)) == roles:
        # Re-granting the roles a member already holds changes nothing: no event, no new
        # epoch (issue 13 §1), answered like a change with the current epoch.
        kept = {"principal": principal, "roles": list(roles), "epoch": current.epoch}
        return Decision([], kept, status=200)
    epoch = (current.epoch if current else 0) + 1
    payload = {"principal": principal, "roles": list(roles), "epoch": epoch}
    result = {"principal": principal, "roles": list(roles), "epoch": epoch}
    if current is not None and current.active:
        return Decision([NewEvent("membership.changed", payload)], result, status=200)
    return Decision([NewEvent("membership.granted", payload)], result, status=201)


def decide_revoke(view: View, command: Command) -> Decision:
    principal = command.body["principal"]
    current: Membership | None = view.get(membership_key(principal))
    if current is None or not current.active:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"{principal} is not a member of {command.group}",
            requirement="wire§4",
            details={"principal": principal},
        )
    epoch = current.epoch + 1
    events = [NewEvent("membership.revoked", {"principal": principal, "epoch": epoch})]
    for ident in sorted(view.get(owned_items_key(principal)) or ()):
        item: WorkItem | None = view.get(work_item_key(ident))
        if item is None or not fenced_by_revocation(item, principal):
            continue  # the projection query is a hint; the item itself decides
        events.extend(revocation_events(item, principal, epoch, command.now))
    return Decision(events, {"principal": principal, "epoch": epoch}, status=200)


MEMBERSHIP = REGISTRY.aggregate(
    "membership", keys=lambda fact: [membership_key(fact.payload["principal"])]
)


@evolves("membership.granted", "membership.changed", aggregate=MEMBERSHIP, creates=True)
def _granted(current: Membership | None, fact: Fact, key: StateKey) -> Membership:
    payload = fact.payload
    return Membership(
        principal=payload["principal"],
        roles=tuple(payload["roles"]),
        epoch=payload["epoch"],
        active=True,
    )


@evolves("membership.revoked", aggregate=MEMBERSHIP)
def _revoked(membership: Membership, fact: Fact, key: StateKey) -> Membership:
    """The epoch survives a revoke, so a later grant continues from it."""
    return replace(membership, epoch=fact.payload["epoch"], active=False)
