"""Bounded offline execution (R11.5-04..R11.5-13): reconciling buffered commands.

A worker that loses the Group Authority may keep its already-active, reversible computation
going for a bounded grace period and buffer signed progress, checkpoints and messages
(R11.5-04). Each buffered command carries the critical binding

    "extensions": {"urn:missionweaveprotocol:extension:bounded-offline-execution": {
        "agent", "group", "work_item", "session_epoch", "ownership_epoch", "lease_id",
        "disconnected_at", "buffered_at", "grace_deadline", "lease_expires_at", "usage"}}

recording when and under which historical lease it was produced (R11.5-07, R11.5-08). On
reconnection the worker keeps the binding but re-signs the envelope with its current session
epoch, membership epoch and ``issued_at`` (R11.5-09), so wire.md §3 applies unchanged; only
the command's own rules differ. Instead of "the current lease is live now", the authority asks
"was the command produced inside the historical lease's window?" on its own clock against the
WorkItem as recorded (R11.5-10):

    lease start ──── disconnected_at ──── buffered_at ──── min(grace_deadline, lease closed_at)
                                              ▲ must lie here, with the same owner and epoch

and, in the same transaction, charges the binding's usage delta up the budget ancestry with an
``ext.missionweaveprotocol.core.resource_usage_recorded`` event that names both sessions,
before the command's own event (R11.5-11, R11.5-12). An overflow refuses both (R11.5-13).

Everything here is pure: the write path hands the parsed extensions over on ``Command``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .budgets import USAGE_RECORDED, non_zero
from .errors import ErrorCode, ProtocolError
from .facts import Command, Decision, FollowUp, NewEvent, StateKey, View
from .identifiers import is_agent
from .timefmt import format_timestamp, parse_timestamp
from .validation import check_amounts, check_fields, check_id, check_principal, malformed
from .work import execution, questions
from .work.checks import require_item
from .work.items import Lease, WorkItem

EXTENSION = "urn:missionweaveprotocol:extension:bounded-offline-execution"
#: where the binding sits in the envelope, for MALFORMED paths (wire.md §8)
BINDING_PATH = f'$.extensions["{EXTENSION}"]'
#: the commands a worker may buffer, and the event each one appends (R11.5-04: progress and
#: checkpoints; R11.5-12 names "the Message or checkpoint")
BUFFERABLE: dict[str, str] = {
    "work.progress": "work.progress_reported",
    "work.checkpoint": "work.checkpointed",
    "work.message": "work.message_posted",
}
#: the longest grace a binding may claim beyond its historical lease's expiry. R11.5-04 says
#: "bounded" without a number; fifteen minutes is three default leases (``LEASE_TTL``), long
#: enough to ride out a restart of the authority and short enough that a reassignment after
#: an expiry (R11.5-01) is never undone by much late work.
MAX_GRACE = timedelta(minutes=15)
BINDING_FIELDS = (
    "agent", "group", "work_item", "session_epoch", "ownership_epoch", "lease_id",
    "disconnected_at", "buffered_at", "grace_deadline", "lease_expires_at", "usage",
)  # fmt: skip
_TIMES = ("disconnected_at", "buffered_at", "grace_deadline", "lease_expires_at")

# why a buffered command fell outside its window (``details.reason`` of OUTSIDE_GRACE_WINDOW)
UNKNOWN_LEASE = "unknown_lease"
SESSION_MISMATCH = "session_mismatch"
LEASE_EXPIRY_MISMATCH = "lease_expiry_mismatch"
GRACE_TOO_LONG = "grace_too_long"
IN_FUTURE = "in_future"
BEFORE_LEASE = "before_lease"
BEFORE_DISCONNECT = "before_disconnect"
CONTACT_WHILE_DISCONNECTED = "contact_while_disconnected"
AFTER_GRACE_DEADLINE = "after_grace_deadline"
#: ``details.reason`` of the STALE_LEASE for a command buffered after its lease closed
AFTER_LEASE_CLOSURE = "after_lease_closure"


@dataclass(frozen=True, slots=True)
class Binding:
    """A well-formed binding (R11.5-08), times parsed; ``document`` is what was sent."""

    agent: str
    group: str
    work_item: str
    session_epoch: int
    ownership_epoch: int
    lease_id: str
    disconnected_at: datetime
    buffered_at: datetime
    grace_deadline: datetime
    lease_expires_at: datetime
    usage: dict[str, Any]
    document: dict[str, Any]


def is_buffered(command: Command) -> bool:
    return EXTENSION in command.extensions


# --- the binding's shape and what it is bound to (R11.5-07, R11.5-08) ---------------------


def _path(name: str | None = None) -> str:
    return BINDING_PATH if name is None else f"{BINDING_PATH}.{name}"


def _epoch(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise malformed(f"{name} is an integer of at least {low}", _path(name), "R11.5-08")
    return value


def parse_binding(value: object) -> Binding:
    """The binding, or MALFORMED naming the bad field by JSON path (R11.5-08).

    Every field R11.5-08 lists is required; ``usage`` is the six-dimension delta of wire.md §9
    (a dimension left out is 0, ``{}`` charges nothing).
    """
    if not isinstance(value, dict):
        raise malformed("the offline binding is an object", _path(), "R11.5-07")
    check_fields(value, required=BINDING_FIELDS, path=BINDING_PATH)
    agent = check_principal(value["agent"], _path("agent"))
    if not is_agent(agent):
        raise malformed("a binding's principal is an agent", _path("agent"), "R11.5-08")
    for name in ("group", "work_item", "lease_id"):
        check_id(value[name], _path(name))
    times: dict[str, datetime] = {}
    for name in _TIMES:
        try:
            times[name] = parse_timestamp(value[name])
        except (ValueError, OverflowError):
            raise malformed(
                "expected an RFC 3339 UTC timestamp ending in Z", _path(name), "wire§1"
            ) from None
    usage = check_amounts(value["usage"], _path("usage"), what="usage")
    return Binding(
        agent=agent,
        group=value["group"],
        work_item=value["work_item"],
        session_epoch=_epoch(value["session_epoch"], "session_epoch", 0),
        ownership_epoch=_epoch(value["ownership_epoch"], "ownership_epoch", 1),
        lease_id=value["lease_id"],
        usage=dict(usage),
        document=value,
        **times,
    )


def _require_bound_to_command(binding: Binding, command: Command) -> None:
    """The binding describes this very command: its signer, group, WorkItem and lease.

    A mismatch is a self-contradicting envelope (MALFORMED, the field named), not a question
    of state: whoever reconciles is the agent that buffered (R11.5-08), and a buffered command
    stays inside the bound WorkItem conversation (R11.5-10).
    """
    if binding.agent != command.actor:
        raise malformed("the binding's agent is not the actor", _path("agent"), "R11.5-08")
    if binding.group != command.group:
        raise malformed("the binding's group is not this group", _path("group"), "R11.5-10")
    if binding.work_item != command.body["work_item"]:
        raise malformed("the binding's work_item is not the body's", _path("work_item"), "R11.5-10")
    lease_id = command.body.get("lease_id")
    if lease_id is not None and lease_id != binding.lease_id:
        raise malformed("the binding's lease_id is not the body's", _path("lease_id"), "R11.5-10")


# --- the historical window (R11.5-10) ------------------------------------------------------


def _outside(
    item: WorkItem, binding: Binding, reason: str, message: str, **more: str
) -> ProtocolError:
    return ProtocolError(
        ErrorCode.OUTSIDE_GRACE_WINDOW,
        message,
        requirement="R11.5-10",
        details={"work_item": item.id, "lease_id": binding.lease_id, "reason": reason, **more},
    )


def _stale_ownership(item: WorkItem, actor: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.STALE_OWNERSHIP,
        f"{item.id} changed owner since {actor} buffered this command",
        requirement="R11.5-10",
        details={
            "work_item": item.id,
            "ownership_epoch": item.ownership_epoch,
            "owner": item.owner,
        },
    )


def _require_same_owner(item: WorkItem, binding: Binding, actor: str) -> None:
    """wire.md §8 precedence: a stranger is FORBIDDEN, a changed owner STALE_OWNERSHIP."""
    if item.owner != actor:
        if actor in item.former_owners:
            raise _stale_ownership(item, actor)
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"{actor} never owned {item.id}",
            requirement="wire§9",
            details={"work_item": item.id},
        )
    if binding.ownership_epoch != item.ownership_epoch:
        raise _stale_ownership(item, actor)


def historical_lease(item: WorkItem, binding: Binding, actor: str) -> Lease:
    """The lease the command was buffered under, checked against the binding's claims."""
    lease = item.lease_named(binding.lease_id)
    if lease is None or lease.agent != actor:
        # never a lease of this item (another WorkItem's, a made-up id): there is no window
        raise _outside(
            item, binding, UNKNOWN_LEASE, f"{binding.lease_id} is no lease of {actor} on {item.id}"
        )
    if lease.ownership_epoch != item.ownership_epoch:
        raise _stale_ownership(item, actor)
    if lease.session_epoch != binding.session_epoch:
        raise _outside(
            item,
            binding,
            SESSION_MISMATCH,
            f"lease {lease.lease_id} was bound to session epoch {lease.session_epoch}",
        )
    if binding.lease_expires_at > parse_timestamp(lease.expires_at):
        raise _outside(
            item,
            binding,
            LEASE_EXPIRY_MISMATCH,
            f"lease {lease.lease_id} expired at {lease.expires_at}, not later",
        )
    return lease


def _require_no_contact_while_disconnected(item: WorkItem, binding: Binding, lease: Lease) -> None:
    """The worker's claimed times are bounded by what the authority itself saw (issue 16 §7):
    a renewal of the lease recorded after ``disconnected_at`` and before ``buffered_at`` is the
    worker talking to the authority while it says it could not — so the disconnection is
    backdated, and with it the window it claims. Its latest contact before ``buffered_at``
    (the lease's start or a renewal, on the authority clock) is the earliest an honest
    disconnection can be. A renewal after ``buffered_at`` is a worker that came back, renewed,
    and then sent its buffer: allowed."""
    contacts = [parse_timestamp(at) for at in (lease.started_at, *lease.renewals)]
    # the lease's start is never after buffered_at here (``before_lease`` was checked)
    seen = max(at for at in contacts if at <= binding.buffered_at)
    if binding.disconnected_at < seen:
        raise _outside(
            item,
            binding,
            CONTACT_WHILE_DISCONNECTED,
            f"the lease was renewed at {format_timestamp(seen)}, after the claimed disconnection",
            last_contact=format_timestamp(seen),
        )


def require_window(item: WorkItem, binding: Binding, actor: str, now: datetime) -> Lease:
    """R11.5-10 on the authority clock: same owner and epoch, a known lease, a buffering time
    inside ``[lease start, min(grace deadline, lease closure)]`` after the disconnection.

    Order (first failure wins): ownership; the lease and the binding's claims about it; the
    binding's times against the authority clock and each other; against the contacts the
    authority saw (the lease's renewals); the lease's closure; the grace deadline.
    """
    _require_same_owner(item, binding, actor)
    lease = historical_lease(item, binding, actor)
    if binding.grace_deadline > binding.lease_expires_at + MAX_GRACE:
        raise _outside(
            item,
            binding,
            GRACE_TOO_LONG,
            f"a grace deadline at most {int(MAX_GRACE.total_seconds())} s after the lease expiry",
        )
    if binding.disconnected_at > now or binding.buffered_at > now:
        raise _outside(item, binding, IN_FUTURE, "the binding's times are in the future")
    started = parse_timestamp(lease.started_at)
    if binding.disconnected_at < started or binding.buffered_at < started:
        raise _outside(
            item, binding, BEFORE_LEASE, f"lease {lease.lease_id} started at {lease.started_at}"
        )
    if binding.buffered_at < binding.disconnected_at:
        raise _outside(item, binding, BEFORE_DISCONNECT, "buffered before the disconnection")
    _require_no_contact_while_disconnected(item, binding, lease)
    if lease.closed_at is not None and binding.buffered_at > parse_timestamp(lease.closed_at):
        # R11.5-10 "after lease closure": the lease ended (checkpoint, expiry, revocation,
        # submission) before this was produced, so it is no longer a lease to act under —
        # the same code as any command under a superseded lease (R11.3-05).
        raise ProtocolError(
            ErrorCode.STALE_LEASE,
            f"lease {lease.lease_id} closed at {lease.closed_at}, before this was buffered",
            requirement="R11.5-10",
            details={
                "work_item": item.id,
                "lease_id": lease.lease_id,
                "reason": AFTER_LEASE_CLOSURE,
                "closed_at": lease.closed_at,
                "closed_by": lease.closed_by,
            },
        )
    if binding.buffered_at > binding.grace_deadline:
        raise _outside(item, binding, AFTER_GRACE_DEADLINE, "buffered after the grace deadline")
    return lease


# --- reconciliation (R11.5-11..R11.5-13) ---------------------------------------------------


def _not_bufferable(command: Command) -> ProtocolError:
    requirement = {"work.submit": "R11.5-06", "work.start": "R11.5-05"}.get(
        command.type, "R11.5-04"
    )
    return ProtocolError(
        ErrorCode.MALFORMED,
        f"{command.type} cannot be buffered offline: only {', '.join(BUFFERABLE)} can",
        requirement=requirement,
        details={"path": BINDING_PATH, "type": command.type},
    )


def decide_buffered(view: View, command: Command) -> Decision:
    """A buffered command, reconciled in one transaction (R11.5-11).

    Events, in order: the usage charge when the delta has a non-zero dimension (R11.5-12),
    then the command's own event with an ``offline`` field holding the binding. The usual
    "current lease, live now, state allows it" checks are replaced by the historical window:
    reconnecting opened a new session, which revoked the lease (R11.3-10) *after* the command
    was buffered, so that closure is inside the window.
    """
    event_type = BUFFERABLE.get(command.type)
    if event_type is None:
        raise _not_bufferable(command)
    binding = parse_binding(command.extensions[EXTENSION])
    _require_bound_to_command(binding, command)
    item = require_item(view, binding.work_item)
    lease = require_window(item, binding, command.actor, command.now)

    events: list[NewEvent] = []
    usage = non_zero(binding.usage)
    follow_ups: tuple[FollowUp, ...] = ()
    if usage:
        charged = execution.charge(view, item, usage)  # BUDGET_EXCEEDED refuses it all
        events.append(
            NewEvent(
                USAGE_RECORDED,
                {
                    "work_item": item.id,
                    **charged,
                    "agent": command.actor,
                    "lease_id": lease.lease_id,
                    "ownership_epoch": item.ownership_epoch,
                    "historical_session_epoch": binding.session_epoch,
                    "reconciling_session_epoch": command.session_epoch,
                    "command_id": command.id,
                    "command_type": command.type,
                    "buffered_at": format_timestamp(binding.buffered_at),
                },
            )
        )
        follow_ups = execution.usage_roll_up(view, item, command, usage)
    payload: dict[str, Any] = {**command.body, "offline": binding.document}
    reconciled = {"lease_id": lease.lease_id, "buffered_at": binding.document["buffered_at"]}
    result: dict[str, Any] = {"reconciled": {**reconciled, "usage": usage}}
    if command.type == "work.message":
        payload["message"] = command.id
        result["message"] = command.id
        # a buffered reply settles an open question no more than a live one (R10.1-04)
        payload.update(
            questions.verdict(item, command.body, actor=command.actor, roles=command.actor_roles)
        )
    events.append(NewEvent(event_type, payload))
    return Decision(events, result, follow_ups=follow_ups)


def with_ancestry(
    keys: Callable[[Command, View], set[StateKey]],
) -> Callable[[Command, View], set[StateKey]]:
    """A bufferable command's keys: its own, plus the budget ancestry when it carries the
    binding, whose usage is charged up every mission above the item (R11.5-12)."""

    def keys_of(command: Command, view: View) -> set[StateKey]:
        own = keys(command, view)
        if is_buffered(command):
            own |= execution.keys_of_charge(command, view)
        return own

    keys_of.__doc__ = keys.__doc__
    return keys_of
