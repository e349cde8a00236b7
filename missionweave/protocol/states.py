"""The WorkItem state machine of R10.2 as data.

``TRANSITIONS`` is the §10.2 table, one row per R-ID: the command (or authority event) that
moves a WorkItem, the states it may start from and where it goes. ``IN_STATE`` lists the
commands that act on a WorkItem without moving it. Anything not allowed here is
``ILLEGAL_TRANSITION`` (R10.2-22) with nothing appended. The table-driven tests are generated
from these two tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ErrorCode, ProtocolError

NONE = "none"  # no WorkItem yet
PROPOSAL = "proposal"  # an open work proposal (R10.2-01)
OPEN = "open"
OFFERED = "offered"
QUEUED = "queued"
ACTIVE = "active"
BLOCKED = "blocked"
SUBMITTED = "submitted"
VERIFIED = "verified"
FAILED = "failed"
CANCELLED = "cancelled"

STATES = (OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, SUBMITTED, VERIFIED, FAILED, CANCELLED)
#: R10.2-19: terminal for that revision; ``failed`` only leaves through a new offer (R10.2-20)
TERMINAL = frozenset({VERIFIED, CANCELLED})
#: for ``all_terminal`` dependency policies (wire.md §9)
DEPENDENCY_TERMINAL = frozenset({VERIFIED, FAILED, CANCELLED})
UNFINISHED = frozenset({OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, SUBMITTED})
#: the worker's part is over — submitted, or ended — so its last progress report is history
WORK_DONE = frozenset({SUBMITTED, VERIFIED, FAILED, CANCELLED})


@dataclass(frozen=True, slots=True)
class Transition:
    rid: str
    command: str
    sources: frozenset[str]
    targets: tuple[str, ...]
    note: str


def _row(
    rid: str, command: str, sources: set[str], targets: tuple[str, ...], note: str
) -> Transition:
    return Transition(rid, command, frozenset(sources), targets, note)


TRANSITIONS: tuple[Transition, ...] = (
    _row("R10.2-01", "work.propose", {NONE}, (PROPOSAL,), "any member but an observer"),
    _row("R10.2-02", "work.authorize", {NONE, PROPOSAL}, (OPEN,), "the coordinator creates it"),
    _row(
        "R10.2-03",
        "work.offer",
        {OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, FAILED},
        (OFFERED,),
        "with no active owner; an expired owner is fenced first",
    ),
    _row("R10.2-04", "work.accept_offer", {OFFERED}, (QUEUED,), "starts the ownership epoch"),
    _row("R10.2-06", "approval.grant_execution", {QUEUED}, (QUEUED,), "satisfies the start gate"),
    _row(
        "R10.2-06",
        "approval.refuse_execution",
        {QUEUED},
        (QUEUED,),
        "the revision may not start; a corrected contract is decided afresh",
    ),
    _row("R10.2-07", "work.start", {QUEUED}, (ACTIVE,), "valid ownership and a lease"),
    _row("R10.2-08", "work.checkpoint", {ACTIVE}, (QUEUED,), "releases execution"),
    _row("R10.2-09", "work.block", {ACTIVE}, (BLOCKED,), "checkpoint and bounded blocked lease"),
    _row("R10.2-10", "work.unblock", {BLOCKED}, (QUEUED, OPEN), "re-queued or re-offered"),
    _row("R10.2-11", "work.submit", {ACTIVE}, (SUBMITTED,), "requires artifacts and evidence"),
    _row("R10.2-12", "work.accept_result", {SUBMITTED}, (VERIFIED,), "successful review"),
    _row(
        "R10.2-13",
        "work.fail",
        {OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, SUBMITTED},
        (FAILED, QUEUED),
        "requires failure evidence; an active owner's failure is retried while the contract "
        "allows (R11.4-08)",
    ),
    _row(
        "R10.2-14",
        "work.cancel",
        {OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, SUBMITTED},
        (CANCELLED,),
        "cleanup policy applies",
    ),
    _row(
        "R10.2-15",
        "mission.create_child",
        {OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED},
        (BLOCKED,),
        "ownership protected while the child runs",
    ),
    _row("R10.2-16", "link.child_approved", {BLOCKED}, (VERIFIED,), "child approval is evidence"),
    _row("R10.2-17", "link.child_failed", {BLOCKED}, (BLOCKED, FAILED), "per failure policy"),
    _row(
        "R10.2-18",
        "mission.fail",
        {OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, SUBMITTED},
        (FAILED,),
        "the mission's failure propagates",
    ),
    _row(
        "R11.5-01",
        "work.reassign",
        {QUEUED, ACTIVE, BLOCKED},
        (OFFERED, OPEN),
        "authority: a missed start deadline, an expired or an outstayed blocked lease",
    ),
    _row(
        "R11.3-10",
        "lease.revoke",
        {ACTIVE},
        (QUEUED,),
        "authority: the owner's session was replaced",
    ),
    _row(
        "R10.2-18",
        "mission.cancel",
        {OPEN, OFFERED, QUEUED, ACTIVE, BLOCKED, SUBMITTED},
        (CANCELLED,),
        "the mission's cancellation propagates",
    ),
)

#: commands on an existing WorkItem that do not change its state, and where they are allowed
IN_STATE: dict[str, frozenset[str]] = {
    "work.reject_offer": frozenset({OFFERED}),
    "lease.renew": frozenset({ACTIVE}),
    "capability.issue": frozenset({ACTIVE}),
    "work.progress": frozenset({ACTIVE}),
    "work.usage": frozenset({ACTIVE}),
    # R11.2-01: wherever the owner still holds the item and its schedule can change — waiting
    # in its queue, running, or blocked under its bounded blocked lease
    "work.disclose_schedule": frozenset({QUEUED, ACTIVE, BLOCKED}),
    "evidence.record": frozenset({SUBMITTED}),
    "work.message": frozenset(STATES),
    # R0-12, R11.3-11: a priority change, wherever the item can still run (never terminal)
    "work.reprioritize": frozenset(STATES) - TERMINAL,
}

_BY_COMMAND: dict[str, Transition] = {}
for _transition in TRANSITIONS:
    _BY_COMMAND.setdefault(_transition.command, _transition)


def transition_for(command: str) -> Transition | None:
    return _BY_COMMAND.get(command)


def allowed_from(command: str) -> frozenset[str]:
    """The states ``command`` may act on (its table row, or its ``IN_STATE`` entry)."""
    row = transition_for(command)
    if row is not None:
        return row.sources
    return IN_STATE[command]


def require_state(command: str, state: str, *, work_item: str) -> None:
    """``ILLEGAL_TRANSITION`` unless the table lets ``command`` act on ``state`` (R10.2-22)."""
    if state in allowed_from(command):
        return
    row = transition_for(command)
    raise ProtocolError(
        ErrorCode.ILLEGAL_TRANSITION,
        f"{command} is not allowed while {work_item} is {state}",
        requirement=row.rid if row is not None else "R10.2-22",
        details={
            "work_item": work_item,
            "state": state,
            "allowed_from": sorted(allowed_from(command)),
        },
    )
