"""Every command the authority knows: who may issue it, its body check, the state it reads.

Adding a command is one ``CommandSpec`` here plus its decide function in a domain module;
the write path does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import capabilities, context, memberships, offline, snapshots
from .artifacts import manifests
from .artifacts.citations import BY_COMMAND, named_by
from .artifacts.naming import stored_keys
from .facts import Command, Decision, StateKey, View
from .missions import changes, children, cleanup, lifecycle
from .work import (
    approvals,
    asks,
    assessment,
    checks,
    execution,
    leases,
    offers,
    planning,
    priorities,
    replacements,
    reservations,
    review,
    schedule,
    submission,
)

ANY_MEMBER_BUT_OBSERVER = frozenset({"admin", "mission_owner", "coordinator", "worker", "reviewer"})
COORDINATOR = frozenset({"coordinator"})
#: who may act as a worker: accept or reject an offer, then, as its owner, run the item (whoever
#: accepted owns it; these roles only gate who may try)
WORKER = frozenset({"worker", "coordinator"})
#: who judges a submission: records evidence, reserves its review (R13.2-03)
REVIEWERS = assessment.REVIEWER_ROLES


@dataclass(frozen=True, slots=True)
class CommandSpec:
    type: str
    #: group roles allowed to issue it (wire.md §9 "issued by")
    roles: frozenset[str]
    #: shape check of the body; raises MALFORMED / CONTRACT_INVALID (wire.md §3 step 9)
    validate: Callable[[dict[str, Any]], None]
    #: the state keys ``decide`` reads, given what is loaded so far (called until it settles)
    keys: Callable[[Command, View], set[StateKey]]
    decide: Callable[[View, Command], Decision]
    #: only a human (``user:``) may issue it
    humans_only: bool = False
    #: an admin operation (staff API token), not accepted at ``POST /groups/{g}/commands``
    staff_only: bool = False
    #: submitted only by the authority itself (cross-group links), never by a client
    authority_only: bool = False
    #: other groups the body names, which must exist (a child mission's group)
    other_groups: Callable[[dict[str, Any]], list[str]] | None = None


def _spec(
    type_: str, roles: frozenset[str], validate: Any, keys: Any, decide: Any, **flags: Any
) -> CommandSpec:
    if type_ in BY_COMMAND:
        keys = _with_named_artifacts(keys)
    return CommandSpec(type_, roles, validate, keys, decide, **flags)


def _with_named_artifacts(
    keys: Callable[[Command, View], set[StateKey]],
) -> Callable[[Command, View], set[StateKey]]:
    """``keys`` plus what the store says of each artifact the body names, which ``decide``
    requires to be nameable by the sender (wire.md §9, ``decider.decide``)."""

    def keys_naming_artifacts(command: Command, view: View) -> set[StateKey]:
        named = named_by(command.type, command.body)
        return keys(command, view) | stored_keys(digest for _path, digest in named)

    return keys_naming_artifacts


_SPECS = (
    _spec(
        lifecycle.CREATE,
        frozenset({"mission_owner", "coordinator"}),
        lifecycle.validate_create,
        lifecycle.keys_of_create,
        lifecycle.decide_create,
    ),
    _spec(
        children.CREATE_CHILD,
        COORDINATOR,
        children.validate_create_child,
        children.keys_of_create_child,
        children.decide_create_child,
        other_groups=lambda body: [body["child"]["group"]],
    ),
    _spec(
        lifecycle.APPROVE,
        frozenset({"mission_owner"}),
        lifecycle.validate_approve,
        lifecycle.keys_of_mission_end,
        lifecycle.decide_approve,
        humans_only=True,
    ),
    # R13.2-03 step 5 (issue 36 §5): the other answer at the final approval, by the same people
    _spec(
        changes.REQUEST,
        changes.ROLES,
        changes.validate_request_changes,
        changes.keys_of_request_changes,
        changes.decide_request_changes,
        humans_only=True,
    ),
    _spec(
        lifecycle.FAIL,
        frozenset({"mission_owner", "coordinator"}),
        lifecycle.validate_fail_or_cancel,
        cleanup.with_cleanup(lifecycle.keys_of_mission_end),
        lifecycle.decide_end,
    ),
    _spec(
        lifecycle.CANCEL,
        frozenset({"mission_owner", "coordinator"}),
        lifecycle.validate_fail_or_cancel,
        cleanup.with_cleanup(lifecycle.keys_of_mission_end),
        lifecycle.decide_end,
    ),
    _spec(
        "work.propose",
        ANY_MEMBER_BUT_OBSERVER,
        planning.validate_propose,
        planning.keys_of_propose,
        planning.decide_propose,
    ),
    _spec(
        "work.authorize",
        COORDINATOR,
        planning.validate_authorize,
        # R10.2-21: the items waiting on a replaced one are told it is carried on
        cleanup.with_cleanup(planning.keys_of_authorize, may_end=replacements.replaceable),
        planning.decide_authorize,
    ),
    _spec(
        "work.message",
        ANY_MEMBER_BUT_OBSERVER,
        planning.validate_message,
        offline.with_ancestry(checks.item_keys),  # a buffered one charges budgets (R11.5-12)
        planning.decide_message,
    ),
    _spec(
        "work.offer",
        COORDINATOR,
        offers.validate_offer,
        # R10.2-20: a failed item offered again no longer holds up the items waiting on it
        cleanup.with_cleanup(checks.item_keys, may_end=replacements.replaceable),
        offers.decide_offer,
    ),
    _spec(
        "work.accept_offer",
        WORKER,
        offers.validate_accept,
        checks.item_keys,
        offers.decide_accept,
    ),
    _spec(
        "work.reject_offer",
        WORKER,
        offers.validate_reject,
        checks.item_keys,
        offers.decide_reject,
    ),
    _spec(
        approvals.GRANT,
        approvals.GRANT_ROLES,
        approvals.validate_grant_execution,
        checks.item_keys,
        approvals.decide_grant_execution,
        humans_only=True,
    ),
    _spec(
        approvals.REFUSE,
        approvals.GRANT_ROLES,
        approvals.validate_refuse_execution,
        checks.item_keys,
        approvals.decide_refuse_execution,
        humans_only=True,
    ),
    _spec(
        "work.start",
        WORKER,
        execution.validate_start,
        execution.keys_of_start,
        execution.decide_start,
    ),
    _spec(
        "lease.renew", WORKER, execution.validate_renew, checks.item_keys, execution.decide_renew
    ),
    _spec(
        capabilities.ISSUE,
        WORKER,
        capabilities.validate_issue,
        checks.item_keys,
        capabilities.decide_issue,
    ),
    _spec(
        "work.progress",
        WORKER,
        execution.validate_progress,
        offline.with_ancestry(checks.item_keys),
        execution.decide_progress,
    ),
    _spec(
        "work.usage",
        WORKER,
        execution.validate_usage,
        execution.keys_of_charge,
        execution.decide_usage,
    ),
    _spec(
        "work.checkpoint",
        WORKER,
        execution.validate_checkpoint,
        offline.with_ancestry(checks.item_keys),
        execution.decide_checkpoint,
    ),
    _spec("work.block", WORKER, execution.validate_block, checks.item_keys, execution.decide_block),
    # R11.2-01, R11.2-02: the owner's estimate, judged by ownership epoch (no lease needed:
    # a queued item has none yet)
    _spec(
        schedule.DISCLOSE,
        WORKER,
        schedule.validate_disclose,
        checks.item_keys,
        schedule.decide_disclose,
    ),
    # R0-12, R11.3-11, R11.1-07: the coordinator or a mission owner changes urgency and deadline
    _spec(
        priorities.REPRIORITIZE,
        priorities.ROLES,
        priorities.validate_reprioritize,
        checks.item_keys,
        priorities.decide_reprioritize,
    ),
    # R10.2-06, R13.2-03 (issue 36): named people asked for an approval or a review
    _spec(asks.ASK, asks.ROLES, asks.validate_ask, asks.keys_of_ask, asks.decide_ask),
    _spec(
        "work.unblock",
        COORDINATOR,
        review.validate_unblock,
        checks.item_keys,
        review.decide_unblock,
    ),
    _spec(
        "work.submit",
        WORKER,
        submission.validate_submit,
        submission.keys_of_submit,
        submission.decide_submit,
    ),
    _spec(
        manifests.PUBLISH,
        WORKER,
        manifests.validate_publish,
        manifests.keys_of_publish,
        manifests.decide_publish,
    ),
    _spec(
        assessment.REQUEST,
        COORDINATOR,
        assessment.validate_request,
        assessment.keys_of_request,
        assessment.decide_request,
    ),
    _spec(
        "evidence.record",
        REVIEWERS,
        review.validate_evidence_record,
        checks.item_keys,
        review.decide_evidence_record,
    ),
    _spec(
        reservations.RESERVE,
        REVIEWERS,
        reservations.validate_reserve,
        checks.item_keys,
        reservations.decide_reserve,
    ),
    _spec(
        reservations.RELEASE,
        REVIEWERS,
        reservations.validate_release,
        checks.item_keys,
        reservations.decide_release,
    ),
    _spec(
        "work.accept_result",
        frozenset({"coordinator", "mission_owner"}),
        review.validate_accept_result,
        checks.item_keys,
        review.decide_accept_result,
    ),
    # the owner, a coordinator, or a human mission_owner sending a submission back (R13.2-03
    # step 5): ``review.decide_fail`` tells them apart
    _spec(
        "work.fail",
        frozenset({"worker", "coordinator", "mission_owner"}),
        review.validate_fail,
        cleanup.with_cleanup(checks.item_keys),
        review.decide_fail,
    ),
    _spec(
        "work.cancel",
        frozenset({"coordinator", "mission_owner"}),
        review.validate_cancel,
        cleanup.with_cleanup(checks.item_keys),  # R10.2-14: cleanup policy applies
        review.decide_cancel,
    ),
    # staff, or the group's own ``admin`` (wire.md §2 "admin (memberships)"; issue 36 §6)
    _spec(
        memberships.GRANT,
        memberships.ADMINISTERS,
        memberships.validate_grant,
        memberships.keys_of_principal,
        memberships.decide_grant,
        staff_only=True,
    ),
    _spec(
        memberships.REVOKE,
        memberships.ADMINISTERS,
        memberships.validate_revoke,
        memberships.keys_of_revoke,
        memberships.decide_revoke,
        staff_only=True,
    ),
    # Staff-only from the admin endpoint (actor: the admin); the periodic Celery task submits
    # it as the authority (wire.md §6 "by the authority").
    _spec(
        snapshots.CREATE,
        frozenset(),
        snapshots.validate_create,
        snapshots.keys_of_create,
        snapshots.decide_create,
        staff_only=True,
    ),
    _spec(
        leases.REASSIGN,
        frozenset(),
        leases.validate_reassign,
        checks.item_keys,
        leases.decide_reassign,
        authority_only=True,
    ),
    _spec(
        leases.REVOKE,
        frozenset(),
        leases.validate_revoke,
        checks.item_keys,
        leases.decide_revoke,
        authority_only=True,
    ),
    _spec(
        execution.LINK_USAGE,
        frozenset(),
        children.validate_link_usage,
        children.keys_of_link_usage,
        children.decide_link_usage,
        authority_only=True,
    ),
    _spec(
        manifests.RECORD_MANIFEST,
        frozenset(),
        manifests.validate_record_manifest,
        manifests.keys_of_record_manifest,
        manifests.decide_record_manifest,
        authority_only=True,
    ),
    _spec(
        children.LINK_CREATE,
        frozenset(),
        children.validate_link_create,
        children.keys_of_link_create,
        children.decide_link_create,
        authority_only=True,
    ),
    _spec(
        children.LINK_APPROVED,
        frozenset(),
        children.validate_link_outcome,
        children.keys_of_link_outcome,
        children.decide_link_approved,
        authority_only=True,
    ),
    _spec(
        children.LINK_FAILED,
        frozenset(),
        children.validate_link_outcome,
        cleanup.with_cleanup(children.keys_of_link_outcome),
        children.decide_link_failed,
        authority_only=True,
    ),
    # R10.2-14: a parent WorkItem's end cancels its child mission in another group
    _spec(
        children.LINK_CANCEL,
        frozenset(),
        cleanup.validate_link_cancel,
        cleanup.keys_of_link_cancel,
        cleanup.decide_link_cancel,
        authority_only=True,
    ),
    _spec(
        context.PUBLISH,
        COORDINATOR,
        context.validate_publish,
        context.keys_of_publish,
        context.decide_publish,
    ),
    # R13.3-07: a coordinator of both groups (the write path checks ``to_group`` too)
    _spec(
        context.FORWARD,
        COORDINATOR,
        context.validate_forward,
        context.keys_of_forward,
        context.decide_forward,
        other_groups=lambda body: [body["to_group"]],
    ),
    _spec(
        context.RECEIVE,
        frozenset(),
        context.validate_receive,
        context.keys_of_receive,
        context.decide_receive,
        authority_only=True,
    ),
)

COMMANDS: dict[str, CommandSpec] = {spec.type: spec for spec in _SPECS}

#: the types an agent or human may send to ``POST /groups/{g}/commands``
PUBLIC_COMMAND_TYPES = frozenset(
    t for t, spec in COMMANDS.items() if not (spec.staff_only or spec.authority_only)
)
#: the types the admin endpoints submit
ADMIN_COMMAND_TYPES = frozenset(t for t, spec in COMMANDS.items() if spec.staff_only)
