"""The owner's commands: ``work.start`` and everything done under its lease (R10.2-07..11,
R11.3, R11.4)."""

from __future__ import annotations

from typing import Any

from .. import budgets, capabilities
from .. import states as S
from ..canonical import digest, is_digest
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, FollowUp, NewEvent, StateKey, View
from ..timefmt import format_timestamp
from ..validation import (
    check_amounts,
    check_fields,
    check_id,
    check_text,
    is_number,
    malformed,
)
from .approvals import require_not_refused
from .checks import (
    approvals_required,
    check_ownership_epoch,
    digests,
    lease_ttl,
    no_private_reasoning,
    owner_with_lease,
    require_current_epoch,
    require_item,
    require_owner,
    start_deadline_for,
    strings,
    timestamp,
)
from .dependents import keys_of_resolution, resolved
from .items import WorkItem, work_item_key
from .leases import require_retry_due

#: the authority command that charges a parent group for a child mission's usage
LINK_USAGE = "link.child_usage"

# --- work.start (R10.2-07, R11.3-03, R10.4-03) -----------------------------------------------


def validate_start(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "ownership_epoch"), optional=("lease_ttl_s",))
    check_id(body["work_item"], "$.work_item")
    check_ownership_epoch(body)
    lease_ttl(body)


def keys_of_start(command: Command, view: View) -> set[StateKey]:
    keys = {work_item_key(command.body["work_item"])}
    item: WorkItem | None = view.get(work_item_key(command.body["work_item"]))
    if item is not None:  # each dependency, or what replaced it (R10.2-21)
        keys |= keys_of_resolution(view, item.depends_on)
    return keys


def lease_id_for(group: str, item: WorkItem, command_id: str) -> str:
    """A stable lease id: the same command replayed names the same lease (R11.3-03)."""
    source = {
        "group": group,
        "work_item": item.id,
        "epoch": item.ownership_epoch,
        "attempt": item.attempts + 1,
        "command": command_id,
    }
    return "lease_" + digest(source)[7:39]


def unmet_dependencies(view: View, item: WorkItem) -> list[str]:
    """The dependencies that do not satisfy the contract's policy (R10.4-03); a replaced one
    is judged by its replacement (R10.2-21)."""
    policy = item.contract.get("dependency_policy", "all_verified")
    done = {S.VERIFIED} if policy == "all_verified" else S.DEPENDENCY_TERMINAL
    unmet = []
    for dep in item.depends_on:
        other = resolved(view, dep)
        if other is None or other.state not in done:
            unmet.append(dep)
    return unmet


def _ended(view: View, unmet: list[str]) -> dict[str, str]:
    """The unmet dependencies that ended (failed or cancelled, replacements followed): the
    item waits on a coordinator, not on time (R10.2-20, R10.2-21)."""
    ended = {}
    for dep in unmet:
        other = resolved(view, dep)
        if other is not None and other.state in (S.FAILED, S.CANCELLED):
            ended[dep] = other.state
    return ended


def decide_start(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    require_owner(item, command.actor)
    require_current_epoch(item, command.body["ownership_epoch"])
    S.require_state(command.type, item.state, work_item=item.id)
    require_retry_due(item, command.now)
    require_not_refused(item)  # R10.2-06: a refused revision never starts
    needed = approvals_required(item)
    if len(item.approvals) < needed:
        raise ProtocolError(
            ErrorCode.APPROVAL_REQUIRED,
            f"{item.id} needs {needed} execution approval(s), has {len(item.approvals)}",
            requirement="R10.1-01",
            details={"approvals": len(item.approvals), "approvals_required": needed},
        )
    unmet = unmet_dependencies(view, item)
    if unmet:
        details: dict[str, Any] = {
            "unmet": unmet,
            "policy": item.contract.get("dependency_policy"),
        }
        ended = _ended(view, unmet)
        if ended:  # they will not be met by waiting: a coordinator must act
            details["ended"] = ended
        raise ProtocolError(
            ErrorCode.DEPENDENCY_UNMET,
            f"{item.id} waits for {', '.join(unmet)}",
            requirement="R10.4-03",
            details=details,
        )
    started = format_timestamp(command.now)
    # R0-11, R11.3-03: the lease binds agent, session epoch, WorkItem, ownership epoch, a
    # stable lease id (renewals keep it) and an expiry
    lease = {
        "lease_id": lease_id_for(command.group, item, command.id),
        "agent": command.actor,
        "session_epoch": command.session_epoch,
        "work_item": item.id,
        "ownership_epoch": item.ownership_epoch,
        "started_at": started,
        "expires_at": format_timestamp(command.now + lease_ttl(command.body)),
    }
    payload = {
        "work_item": item.id,
        "ownership_epoch": item.ownership_epoch,
        "lease": lease,
        "attempt": item.next_attempt(),
    }
    result = {"lease": {"lease_id": lease["lease_id"], "expires_at": lease["expires_at"]}}
    # R11.3-06, R11.3-08: one token for the contract's full scope, bound to the new lease and
    # expiring with it; the write path signs it into ``result["capability_tokens"]`` (wire §9)
    token = capabilities.token_claims(
        command,
        item=item,
        lease_id=lease["lease_id"],
        session_epoch=command.session_epoch,
        lease_expires_at=lease["expires_at"],
        scope=capabilities.contract_scope(item),
    )
    return Decision([NewEvent("work.started", payload)], result, capabilities=(token,))


# --- the owner's execution commands (R11.3-04) -----------------------------------------------


def _validate_owner_body(
    body: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> None:
    check_fields(body, required=("work_item", "lease_id", *required), optional=optional)
    check_id(body["work_item"], "$.work_item")
    check_id(body["lease_id"], "$.lease_id")


def validate_renew(body: dict[str, Any]) -> None:
    _validate_owner_body(body, (), optional=("lease_ttl_s",))
    lease_ttl(body)


def decide_renew(view: View, command: Command) -> Decision:
    """R11.3-03: a renewal extends the current lease from now (the authority clock).

    The lease keeps its id, so the tokens already issued under it stay valid until their own
    ``exp``; a fresh full-scope token reaching the new expiry comes with it (R11.3-08)."""
    item, lease = owner_with_lease(view, command)
    expires_at = format_timestamp(command.now + lease_ttl(command.body))
    payload = {"work_item": item.id, "lease_id": lease.lease_id, "expires_at": expires_at}
    token = capabilities.token_claims(
        command,
        item=item,
        lease_id=lease.lease_id,
        session_epoch=lease.session_epoch,
        lease_expires_at=expires_at,
        scope=capabilities.contract_scope(item),
    )
    return Decision(
        [NewEvent("lease.renewed", payload)],
        {"lease": {"lease_id": lease.lease_id, "expires_at": expires_at}},
        capabilities=(token,),
    )


def validate_progress(body: dict[str, Any]) -> None:
    """R11.4-01: structured progress; R11.4-02: no percentages (no such field exists)."""
    _validate_owner_body(
        body,
        (
            "phase",
            "milestones_completed",
            "next_checkpoint",
            "blockers",
            "estimate",
            "evidence_refs",
        ),
    )
    check_text(body["phase"], "$.phase", max_length=200)
    strings(body["milestones_completed"], "$.milestones_completed")
    if body["next_checkpoint"] is not None:
        check_text(body["next_checkpoint"], "$.next_checkpoint", max_length=500)
    strings(body["blockers"], "$.blockers")
    estimate = body["estimate"]
    if not isinstance(estimate, dict):
        raise malformed("estimate is {finish_at, confidence}", "$.estimate", "R11.4-01")
    check_fields(estimate, required=("finish_at", "confidence"), path="$.estimate")
    timestamp(estimate["finish_at"], "$.estimate.finish_at")
    confidence = estimate["confidence"]
    if not is_number(confidence) or not 0 <= confidence <= 1:
        raise malformed("confidence is a number from 0 to 1", "$.estimate.confidence", "R11.4-01")
    strings(body["evidence_refs"], "$.evidence_refs")
    no_private_reasoning(body, "$", "R13.2-05")


def _recorded(event: str):
    def decide(view: View, command: Command) -> Decision:
        owner_with_lease(view, command)
        return Decision([NewEvent(event, dict(command.body))])

    return decide


def validate_usage(body: dict[str, Any]) -> None:
    _validate_owner_body(body, ("usage",))
    check_amounts(body["usage"], "$.usage", what="usage")


def keys_of_charge(command: Command, view: View) -> set[StateKey]:
    """The item, then its mission and the mission's ancestors as they load (R11.5-12)."""
    key = work_item_key(command.body["work_item"])
    keys = {key}
    item: WorkItem | None = view.get(key)
    if item is not None:
        keys |= budgets.ancestry_keys(view, item.mission)
    return keys


def charge(view: View, item: WorkItem, usage: dict[str, Any]) -> dict[str, Any]:
    """Check a usage delta against the item and every mission above it; the payload fields
    that let ``evolve`` charge them all (R11.5-12, R11.5-13)."""
    chain = budgets.ancestry(view, item.mission)
    holders = [("work_item", item), *(("mission", mission) for mission in chain)]
    budgets.check_charge(holders, usage)
    return {"usage": usage, "charged_missions": [mission.id for mission in chain]}


def usage_roll_up(
    view: View, item: WorkItem, command: Command, usage: dict[str, Any]
) -> tuple[FollowUp, ...]:
    """The follow-up that carries a charge across a group boundary (R10.4-05).

    When the top of the item's same-group mission chain is a child mission of a WorkItem in
    another group, the parent group is charged after this commit by the authority command
    ``link.child_usage`` (deterministic id: a retry is a replay). The child mission's own
    limits are what refuses here; the parent side records, and flags, what overflowed.
    """
    chain = budgets.ancestry(view, item.mission)
    top = chain[-1] if chain else None
    link = getattr(top, "link", None)
    if not budgets.non_zero(usage) or link is None or link["group"] == command.group:
        return ()
    body = {
        "work_item": link["work_item"],
        "correlation_id": link["correlation_id"],
        "usage": budgets.non_zero(usage),
        "source": {"group": command.group, "mission": top.id, "command_id": command.id},
    }
    command_id = "usage:" + digest({"g": command.group, "c": command.id})[7:47]
    return (FollowUp(link["group"], LINK_USAGE, body, command_id),)


def decide_usage(view: View, command: Command) -> Decision:
    """R10.1-01(g): usage is charged up the whole ancestry or refused as a whole."""
    item, _lease = owner_with_lease(view, command)
    usage = command.body["usage"]
    payload = {**command.body, **charge(view, item, usage)}
    return Decision(
        [NewEvent("work.usage_recorded", payload)],
        follow_ups=usage_roll_up(view, item, command, usage),
    )


def validate_checkpoint(body: dict[str, Any]) -> None:
    _validate_owner_body(body, ("checkpoint",))
    _check_checkpoint(body["checkpoint"], "$.checkpoint")


def _check_checkpoint(value: object, path: str) -> None:
    """``{ref, state_digest, artifacts}`` and, added by issue 35 §2, an optional
    ``state_artifact``: the digest of the stored artifact from which any new owner can
    restore the state (R11.5-01). Like every digest a command names it must be nameable by
    the sender (``decider.decide``, wire.md §9): uploaded by it, or already cited here."""
    if not isinstance(value, dict):
        raise malformed("a checkpoint is {ref, state_digest, artifacts}", path, "R11.3-13")
    check_fields(
        value,
        required=("ref", "state_digest", "artifacts"),
        optional=("state_artifact",),
        path=path,
    )
    check_text(value["ref"], f"{path}.ref", max_length=500)
    if not is_digest(value["state_digest"]):
        raise malformed("state_digest is sha256:<64 hex>", f"{path}.state_digest", "wire§1")
    digests(value["artifacts"], f"{path}.artifacts")
    if "state_artifact" in value and not is_digest(value["state_artifact"]):
        raise malformed("state_artifact is sha256:<64 hex>", f"{path}.state_artifact", "R11.5-01")


def validate_block(body: dict[str, Any]) -> None:
    """R11.4-04: a block carries its required resolution and a checkpoint."""
    _validate_owner_body(body, ("required_resolution", "checkpoint"))
    check_text(body["required_resolution"], "$.required_resolution")
    _check_checkpoint(body["checkpoint"], "$.checkpoint")


decide_progress = _recorded("work.progress_reported")


def decide_checkpoint(view: View, command: Command) -> Decision:
    """R10.2-08: durable progress releases execution (R11.3-09) while keeping a bounded
    ownership lease: a fresh start deadline, so the owner is not fenced on the spot."""
    item, _lease = owner_with_lease(view, command)
    payload = {**command.body, "start_deadline": start_deadline_for(item, command.now)}
    return Decision([NewEvent("work.checkpointed", payload)])


def decide_block(view: View, command: Command) -> Decision:
    """R10.2-09, R11.4-04: checkpoint, ``work.blocked`` with the resolution, release."""
    owner_with_lease(view, command)
    return Decision([NewEvent("work.blocked", dict(command.body))])
