"""The one door for writes.

Every state change — from the API, the dashboard, the admin endpoints, a Celery task, a
management command — is a command handed to :func:`submit_command` (or
:func:`submit_batch`). Top to bottom it follows wire.md §3:

    verify (envelope, token ↔ actor, signature, clock)
    → lock the group head → idempotency → session epoch → membership, role, epoch
    → body shape → decide (pure) → append → project (``evolve``) → record the response
    → broadcast after commit

Nothing else writes events or projection rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from missionweave.protocol import decider, offline, states
from missionweave.protocol.artifacts.outputs import MAX_SCHEMA_OUTPUT_BYTES
from missionweave.protocol.authorization import authorize
from missionweave.protocol.commands import (
    ADMIN_COMMAND_TYPES,
    COMMANDS,
    PUBLIC_COMMAND_TYPES,
    CommandSpec,
)
from missionweave.protocol.envelope import (
    Envelope,
    check_clock_skew,
    check_signature,
    human_envelope,
    parse_envelope,
)
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.facts import Command, Decision, FollowUp
from missionweave.protocol.identifiers import AUTHORITY, is_agent, user_principal, username_of
from missionweave.protocol.memberships import current_epoch, membership_key

from . import (
    agents,
    artifacts,
    capabilities,
    metrics,
    outbox,
    parallel_signatures,
    reactions,
    signatures,
)
from . import head as heads
from .broadcast import announce_head
from .projections import load_view
from .stage import Plan, Stage, lock_and_read

logger = logging.getLogger(__name__)
CallerKind = Literal["agent", "user", "authority"]
#: the bounded offline execution binding (R11.5-07); any other URN is UNSUPPORTED_EXTENSION
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset({offline.EXTENSION})
#: ``spec.keys`` rounds: a mission ancestry loads one level a round (budgets.MAX_ANCESTRY)
MAX_LOAD_ROUNDS = 66


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is submitting, as established by authentication (wire.md §3 step 1)."""

    principal: str
    kind: CallerKind
    session_epoch: int | None = None  # an agent's: the epoch of the session its token opened
    is_staff: bool = False

    @classmethod
    def for_user(cls, user: AbstractBaseUser) -> Caller:
        """A signed-in person: every dashboard, demo and admin command of a human starts here."""
        return cls(
            principal=user_principal(user.get_username()),
            kind="user",
            is_staff=bool(getattr(user, "is_staff", False)),
        )

    @property
    def username(self) -> str:
        """A person's username (``ValueError`` for an agent or the authority)."""
        return username_of(self.principal)


AUTHORITY_CALLER = Caller(principal=AUTHORITY, kind="authority")


@dataclass(frozen=True, slots=True)
class Outcome:
    """An accepted command's response (``replayed`` when served from the idempotency record)."""

    status: int
    body: dict[str, Any]
    replayed: bool
    events: Sequence[dict[str, Any]] = ()
    follow_ups: Sequence[FollowUp] = ()


@dataclass(frozen=True, slots=True)
class Verified:
    envelope: Envelope
    spec: CommandSpec
    #: an agent's: the key texts its signature was checked against (``agents``)
    key_texts: tuple[str, ...] = ()


def submit_command(
    *, group_id: str, document: object, caller: Caller, admin: bool = False
) -> Outcome:
    """Verify, authorise and apply one command; raise ``ProtocolError`` when refused.

    ``admin`` admits the staff-only types (membership changes) that the admin endpoints send.
    """
    return _measured(
        metrics.command_type(document),
        lambda: _run(group_id, verify(group_id, document, caller, admin=admin), caller),
    )


def _measured(type_: str, attempt: Callable[[], Outcome]) -> Outcome:
    """One command through the write path, timed and counted as accepted or refused."""
    with metrics.timed(metrics.SINGLE):
        try:
            outcome = attempt()
        except ProtocolError as refusal:
            metrics.count(type_, refusal)
            raise
    metrics.count(type_, outcome)
    return outcome


def submit_as_human(
    *,
    caller: Caller,
    group_id: str,
    type_: str,
    body: dict[str, Any],
    command_id: str,
    admin: bool = False,
) -> Outcome:
    """A person's command from inside the product (dashboard, demo, admin endpoints): the
    unsigned envelope of wire.md §3, then the same door as the API. The one place a human
    envelope is built on the server.

    The envelope carries the person's current membership epoch; without an active membership
    it is 0 and the door answers NOT_A_MEMBER. ``admin`` sends a staff-only command (see
    :func:`submit_command`): an admin need not be a member, so the epoch is 0 and unread.
    """
    document = human_document(
        caller=caller,
        group_id=group_id,
        type_=type_,
        body=body,
        command_id=command_id,
        admin=admin,
    )
    return submit_command(group_id=group_id, document=document, caller=caller, admin=admin)


def human_document(
    *,
    caller: Caller,
    group_id: str,
    type_: str,
    body: dict[str, Any],
    command_id: str,
    admin: bool = False,
) -> dict[str, Any]:
    """The unsigned envelope a person's command travels in (wire.md §3), with their current
    membership epoch (0 without an active membership, or for staff's staff-only command: an
    admin need not be a member). A group's admin sends theirs (``_as_group_admin``)."""
    epoch = 0
    if not (admin and caller.is_staff):
        key = membership_key(caller.principal)
        epoch = current_epoch(load_view(group_id, [key])[key])
    return human_envelope(
        command_id=command_id,
        type_=type_,
        group=group_id,
        username=caller.username,
        membership_epoch=epoch,
        issued_at=timezone.now(),
        body=body,
    )


def submit_authority_command(
    *, group_id: str, type_: str, body: dict[str, Any], command_id: str
) -> Outcome:
    """A command the authority issues itself (cross-group links, Celery sweeps, session
    replacement).

    It skips the client checks (no token, signature or membership: the authority is not a
    member) but nothing else: idempotency, decide, append and project are the same door.
    """
    return _measured(
        type_,
        lambda: _run(
            group_id, _authority_command(group_id, type_, body, command_id), AUTHORITY_CALLER
        ),
    )


@dataclass(frozen=True, slots=True)
class AuthorityCommand:
    type: str
    body: dict[str, Any]
    command_id: str


def submit_authority_batch(
    *,
    group_id: str,
    commands: Sequence[AuthorityCommand] = (),
    select: Callable[[], Sequence[AuthorityCommand]] | None = None,
) -> list[Outcome | ProtocolError]:
    """Several authority commands into one group under one lock (a sweep's due items).

    Each is judged on its own, exactly like ``commands:batch``: a refused one (no longer due,
    say) stages nothing, so it leaves no trace and does not stop the rest. ``select``, if given,
    chooses more commands *under the lock*, so nothing committed before the lock is missed
    (the leases of a replaced session, R11.3-10).
    """
    with metrics.timed(metrics.BATCH), transaction.atomic():
        head = None
        if select is not None:
            head = heads.lock_existing_head(group_id)
            commands = [*commands, *select()]
        verified: list[Outcome | ProtocolError | Verified] = [
            _authority_command(group_id, c.type, c.body, c.command_id) for c in commands
        ]
        outcomes = _run_batch(group_id, verified, AUTHORITY_CALLER, head=head)
    metrics.count_each([command.type for command in commands], outcomes)
    return outcomes


def _authority_command(
    group_id: str, type_: str, body: dict[str, Any], command_id: str
) -> Verified:
    now = timezone.now()
    document = {
        "id": command_id,
        "type": type_,
        "group": group_id,
        "actor": AUTHORITY,
        "body": body,
    }
    envelope = Envelope(
        id=command_id,
        type=type_,
        group=group_id,
        actor=AUTHORITY,
        actor_kind="authority",
        actor_name=AUTHORITY,
        session_epoch=None,
        membership_epoch=0,
        issued_at=now,
        body=body,
        extensions={},
        signature=None,
        document=document,
    )
    return Verified(envelope, COMMANDS[type_])


def _run(group_id: str, verified: Verified, caller: Caller) -> Outcome:
    with transaction.atomic():
        head, stage = lock_and_read(group_id, _plan([verified], caller), head=None)
        outcome = _apply(head, stage, verified, caller)
        outbox.enqueue(group_id, verified.envelope.id, outcome.follow_ups, run=run_follow_up)
        stage.flush(head)  # last: it may commit
    _announce_on_commit(head)
    return outcome


def run_follow_up(follow_up: FollowUp) -> Outcome | None:
    """Carry a cross-group link to the other group's log (R10.4-05, R10.4-06); a refusal
    runs the compensation instead. Called after commit from the outbox (``outbox``)."""
    try:
        return submit_authority_command(
            group_id=follow_up.group,
            type_=follow_up.type,
            body=follow_up.body,
            command_id=follow_up.command_id,
        )
    except ProtocolError as refusal:
        logger.warning("follow-up %s to %s refused: %r", follow_up.type, follow_up.group, refusal)
        if follow_up.on_refusal is not None:
            return run_follow_up(follow_up.on_refusal)
    return None


def submit_batch(
    *, group_id: str, documents: Sequence[object], caller: Caller
) -> list[Outcome | ProtocolError]:
    """Judge each command on its own, in order, under one lock of the group head.

    A refused item stages nothing (``Stage``), so it leaves no trace and does not stop the
    ones after it; the batch holds the head lock once instead of once per command.
    """
    types = [metrics.command_type(document) for document in documents]
    metrics.BATCH_SIZE.observe(len(documents))
    with metrics.timed(metrics.BATCH):
        results: list[Outcome | ProtocolError | Verified] = [
            *verify_each(group_id, documents, caller)
        ]
        try:
            outcomes = _run_batch(group_id, results, caller)
        except ProtocolError as refusal:  # the whole request (no such group)
            metrics.count_each(types, [refusal] * len(types))
            raise
    metrics.count_each(types, outcomes)
    return outcomes


def _run_batch(
    group_id: str,
    results: list[Outcome | ProtocolError | Verified],
    caller: Caller,
    *,
    head: heads.Head | None = None,
) -> list[Outcome | ProtocolError]:
    """Judge the verified items of ``results`` in order under one lock, then write what
    the accepted ones decided in bulk (``Stage``): a refused item stages nothing, so it
    leaves no trace and does not stop the ones after it (issue 15 §2).

    ``head`` is the group's head when the caller's transaction already locked it."""
    verified = [item for item in results if isinstance(item, Verified)]
    if not verified:
        return results  # type: ignore[return-value]
    # Inside a caller's transaction (a sweep's group, a session's leases) no savepoint: a
    # refused item stages nothing, so nothing needs undoing but by the whole transaction.
    with transaction.atomic(savepoint=False):
        head, stage = lock_and_read(group_id, _plan(verified, caller), head=head)
        for index, item in enumerate(results):
            if not isinstance(item, Verified):
                continue
            mark = (head.sequence, head.hash, len(head.appended))
            try:
                results[index] = outcome = _apply(head, stage, item, caller)
            except ProtocolError as refusal:
                head.sequence, head.hash = mark[0], mark[1]
                del head.appended[mark[2] :]
                results[index] = refusal
                continue
            outbox.enqueue(group_id, item.envelope.id, outcome.follow_ups, run=run_follow_up)
        stage.flush(head)  # last: it may commit
    _announce_on_commit(head)
    return results  # type: ignore[return-value]


def _plan(items: list[Verified], caller: Caller) -> Plan:
    """What a run of commands will ask for by key, read with the lock in one round trip
    instead of a round trip each: their idempotency records, their senders' standing and
    memberships, and the aggregates their types name before reading anything (``spec.keys``
    of an empty view). It is a guess made before the lock; anything it misses is read when
    asked, and a body its own judging will refuse names nothing here."""
    now = timezone.now()
    agent_ids: set[str] = set()
    keys: set[Any] = set()
    for item in items:
        envelope, spec = item.envelope, item.spec
        if envelope.actor_kind == "agent":
            agent_ids.add(envelope.actor_name)
        if caller.kind != "authority":
            keys.add(membership_key(envelope.actor))
        try:
            spec.validate(envelope.body)
        except ProtocolError:
            continue
        group_id = envelope.group
        command = command_of(envelope, group_id, roles=frozenset(), now=now, head_sequence=0)
        keys |= {key for key in spec.keys(command, {}) if key[0] not in _OUTSIDE_THE_LOG}
    return Plan(
        records=frozenset((item.envelope.actor, item.envelope.id) for item in items),
        agents=frozenset(agent_ids),
        keys=frozenset(keys),
    )


def verify(group_id: str, document: object, caller: Caller, *, admin: bool) -> Verified:
    """wire.md §3 steps 2–4: everything that needs no lock.

    An agent's signature is checked against its keys as this process last read them
    (``agents.keys_for_signature``), read again when they refuse it; ``_apply`` confirms
    them under the group lock before anything else.
    """
    (verified,) = verify_each(group_id, [document], caller, admin=admin)
    if isinstance(verified, ProtocolError):
        raise verified
    return verified


def verify_each(
    group_id: str, documents: Sequence[object], caller: Caller, *, admin: bool = False
) -> list[Verified | ProtocolError]:
    """``verify`` of each of a batch's documents, in order, the refusal in place of a
    refused one: parsed, the actor matched to the token, the signature (a batch's checked
    side by side on the cores: ``parallel_signatures``), the clock."""
    parsed: list[tuple[Envelope, CommandSpec, tuple[str, ...]] | ProtocolError] = []
    checks: list[parallel_signatures.Check] = []
    for document in documents:
        try:
            envelope, spec = _parsed(group_id, document, caller, admin=admin)
        except ProtocolError as refusal:
            parsed.append(refusal)
            checks.append(None)
            continue
        if envelope.actor_kind == "agent":  # every agent's, also one with no key at all
            keys = agents.keys_for_signature(envelope.actor_name)
            checks.append((envelope, agents.parsed(keys)))
        else:
            keys = ()
            checks.append(None)
        parsed.append((envelope, spec, keys))
    results: list[Verified | ProtocolError] = []
    for item, refusal in zip(parsed, parallel_signatures.refusals(checks), strict=True):
        if isinstance(item, ProtocolError):
            results.append(item)
            continue
        envelope, spec, keys = item
        try:
            if refusal is not None:
                keys = _signed_by_a_newer_key(envelope, keys, refusal)
            check_clock_skew(envelope.issued_at, timezone.now())
        except ProtocolError as later_refusal:
            results.append(later_refusal)
            continue
        results.append(Verified(envelope, spec, keys))
    return results


def _parsed(
    group_id: str, document: object, caller: Caller, *, admin: bool
) -> tuple[Envelope, CommandSpec]:
    """wire.md §3 step 2 and the actor's token: the envelope and its command's spec."""
    known = ADMIN_COMMAND_TYPES if admin else PUBLIC_COMMAND_TYPES
    envelope = parse_envelope(
        document, path_group=group_id, known_types=known, supported_extensions=SUPPORTED_EXTENSIONS
    )
    if caller.kind != "authority" and envelope.actor != caller.principal:
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"the token authenticates {caller.principal}, not {envelope.actor}",
            requirement="wire§3",
        )
    return envelope, COMMANDS[envelope.type]


def _signed_by_a_newer_key(
    envelope: Envelope, refused_by: tuple[str, ...], refusal: ProtocolError
) -> tuple[str, ...]:
    """wire.md §3 step 3 again when the cached keys ``refused_by`` refused the signature:
    against the agent's keys read now (one added since), which are returned if they verify
    it; ``refusal`` stands when they are the same keys."""
    fresh = agents.keys_for_signature(envelope.actor_name, fresh=True)
    if fresh == refused_by:
        raise refusal
    check_signature(envelope, agents.parsed(fresh))
    return fresh


def _apply(head: heads.Head, stage: Stage, verified: Verified, caller: Caller) -> Outcome:
    """wire.md §3 steps 5–9, then decide, append, project and record — under the head lock,
    into ``stage``, which the caller flushes once its run of commands is judged."""
    envelope = verified.envelope
    group_id = head.group_id
    standing = None
    current_epoch = None
    if envelope.actor_kind == "agent":
        # 3, confirmed: the keys the signature was checked against are still the agent's
        # under the lock; when they are not, it is checked against the current ones
        standing = stage.standing(envelope.actor_name)
        current_keys = standing.keys if standing is not None else ()
        if current_keys != verified.key_texts:
            agents.remember_keys(envelope.actor_name, current_keys)
            check_signature(envelope, agents.parsed(current_keys))
        # 1, confirmed: the token's session is still the agent's current one. The command
        # edge may have judged the token from its per-process cache (apps/api/edge.py), so
        # this is where a replaced session's token is refused, before it can read a replay.
        current_epoch = standing.session_epoch if standing is not None else None
        if current_epoch != caller.session_epoch:
            raise _stale_session(envelope.session_epoch, current_epoch)

    # 5. idempotency: same id from the same actor in this group (a unique constraint: at most
    # one row)
    record = stage.recorded(envelope.actor, envelope.id)
    if record is not None:
        if record.content_digest != envelope.content_digest:
            raise ProtocolError(
                ErrorCode.DUPLICATE_COMMAND_ID,
                f"command id {envelope.id!r} was already used for other content",
                requirement="wire§3",
                details={"command_id": envelope.id},
            )
        return Outcome(record.status, record.response, replayed=True)

    # 6. session epoch: the envelope's is the token's, which is still the agent's current one
    # under the group lock (checked above), so a command racing a session replacement either
    # lands before its lease revocation visits this group or is refused (R11.3-10)
    if envelope.actor_kind == "agent" and envelope.session_epoch != current_epoch:
        raise _stale_session(envelope.session_epoch, current_epoch)

    view, decision = judge(
        group_id, verified, caller, now=head.now, head_sequence=head.sequence, stage=stage
    )
    decision = capabilities.minted(decision)  # R11.3-06: sign the decided tokens' claims
    decision = signatures.signed_events(decision)  # R13.1-03, R13.3-01: manifests, packages

    facts, event_rows = heads.seal(
        head, decision.events, command_id=envelope.id, actor=envelope.actor
    )
    # An event may change an aggregate decide had no reason to read (a digest's first
    # citation in this group creates its ``artifact`` record): load those too, so a row
    # that exists is updated, never inserted twice.
    routed = [(fact, decider.routes(fact)) for fact in facts]
    unread = {key for _fact, keys in routed for key in keys} - view.keys()
    if unread:
        view = {**view, **stage.view(unread)}
    state = dict(view)
    changed: set[Any] = set()
    for fact, keys in routed:
        changed.update(decider.apply(state, fact, keys))

    events = head.appended[len(head.appended) - len(facts) :]
    body = {
        "command_id": envelope.id,
        "events": [
            {"event_id": e["event_id"], "sequence": e["sequence"], "type": e["type"]}
            for e in events
        ],
        "result": decision.result,
    }
    # The head lock serialises the record's insert; the unique constraint is the backstop.
    stage.accept(
        state=state,
        changed=changed,
        event_rows=event_rows,
        record={
            "group_id": group_id,
            "actor": envelope.actor,
            "command_id": envelope.id,
            "content_digest": envelope.content_digest,
            "status": decision.status,
            "response": body,
            "accepted_at": head.now,
        },
    )
    return Outcome(
        decision.status, body, replayed=False, events=events, follow_ups=decision.follow_ups
    )


def judge(
    group_id: str,
    verified: Verified,
    caller: Caller,
    *,
    now: datetime,
    head_sequence: int,
    stage: Stage | None = None,
) -> tuple[dict[Any, Any], Decision]:
    """wire.md §3 steps 7–9, then ``decide``: the aggregates read and the decision, or the
    ``ProtocolError`` that refuses the command. Reads only, so it is the same question whether
    the write path asks it under the head lock or a screen asks it without (``preview``).

    It reads through ``stage``: under the lock, the run's stage, which answers what earlier
    commands of the run changed; without one, a fresh stage reads the database.
    """
    stage = stage or Stage(group_id)
    envelope, spec = verified.envelope, verified.spec
    # 7–8. membership, role, membership epoch
    roles: frozenset[str] = frozenset()
    if spec.staff_only and caller.kind != "authority":  # the authority may too (snapshots)
        if not caller.is_staff:
            roles = _as_group_admin(spec, envelope, stage)
    elif caller.kind != "authority":
        actor_key = membership_key(envelope.actor)
        membership = stage.view([actor_key])[actor_key]
        authorize(
            spec, membership, actor=envelope.actor, membership_epoch=envelope.membership_epoch
        )
        roles = frozenset(membership.roles)

    # 9. the body's shape, then the command's own rules
    spec.validate(envelope.body)
    if spec.other_groups is not None:
        actor = envelope.actor if caller.kind != "authority" else None
        _require_groups(spec, envelope.body, group_id=group_id, actor=actor)
    command = command_of(envelope, group_id, roles=roles, now=now, head_sequence=head_sequence)
    view = _load_what_decide_reads(spec, command, stage)
    return view, decider.decide(view, command)


def _as_group_admin(spec: CommandSpec, envelope: Envelope, stage: Stage) -> frozenset[str]:
    """A staff-only command from someone who is not staff: taken only from an active member
    holding a role the command table names for it (a group's ``admin`` changes its
    memberships, wire.md §2, issue 36 §6), with membership and epoch checked as for any
    member's command; anyone else is FORBIDDEN, as before."""
    actor_key = membership_key(envelope.actor)
    membership = stage.view([actor_key])[actor_key] if spec.roles else None
    if membership is None or not membership.active or not spec.roles & set(membership.roles):
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            "admins only: staff, or the group's admin",
            requirement="wire§4",
            details={"allowed_roles": sorted(spec.roles)},
        )
    authorize(spec, membership, actor=envelope.actor, membership_epoch=envelope.membership_epoch)
    return frozenset(membership.roles)


def command_of(
    envelope: Envelope,
    group_id: str,
    *,
    roles: frozenset[str],
    now: datetime,
    head_sequence: int,
) -> Command:
    """The command ``decide`` judges: the verified envelope, with the sender's roles in the
    group and the authority's clock and head at the time of judging."""
    return Command(
        id=envelope.id,
        type=envelope.type,
        group=group_id,
        actor=envelope.actor,
        body=envelope.body,
        now=now,
        session_epoch=envelope.session_epoch,
        actor_roles=roles,
        extensions=envelope.extensions,
        head_sequence=head_sequence,
    )


def _load_what_decide_reads(spec: CommandSpec, command: Command, stage: Stage) -> dict[Any, Any]:
    """Load the aggregates ``spec.keys`` names, again while loading them reveals more (a
    WorkItem's dependencies, a mission's WorkItems, a budget's ancestry one level a round)."""
    view: dict[Any, Any] = {}
    for _ in range(MAX_LOAD_ROUNDS):
        missing = spec.keys(command, view) - view.keys()
        if not missing:
            break
        view.update(_load_keys(command, missing, stage))
    return view


#: view keys that are not projections of this group's log, and who answers them
_OUTSIDE_THE_LOG = ("stored_artifact", "artifact_bytes", "agent_card", "agent_keys", "owned_items")
#: the WorkItem states a membership revocation fences at once (wire.md §4, R11.5-01)
_FENCED_STATES = (states.QUEUED, states.ACTIVE)


def _load_keys(command: Command, keys: set[Any], stage: Stage) -> dict[Any, Any]:
    """The projections at ``keys``, plus what the store and the registry say, which no log
    records: the artifacts the sender may name (wire.md §9), the verified bytes of outputs
    with a schema (R13.2-03), an agent's current card version and keys (R13.1-03), the
    WorkItems a member owns, which a revocation fences (wire.md §4)."""
    outside = {key for key in keys if key[0] in _OUTSIDE_THE_LOG}
    view = stage.view(keys - outside)
    digests = [ident for kind, ident in outside if kind == "stored_artifact"]
    if digests:
        nameable = artifacts.directory().nameable(command.group, command.actor, digests)
        view.update({("stored_artifact", d): nameable.get(d) for d in digests})
    for kind, ident in outside:
        if kind == "artifact_bytes":
            view[(kind, ident)] = _read_output(ident)
        elif kind == "agent_card":
            view[(kind, ident)] = agents.directory().card_version(ident)
        elif kind == "owned_items":  # a query of the WorkItem projection, not an aggregate
            view[(kind, ident)] = stage.owned("work_item", ident, _FENCED_STATES)
        elif kind == "agent_keys":
            agent_id = ident.removeprefix("agent:")
            view[(kind, ident)] = (
                agents.directory().current_keys(agent_id) if is_agent(ident) else []
            )
    return view


def _read_output(digest: str) -> bytes | None:
    read = artifacts.directory().read_verified
    return read(digest, MAX_SCHEMA_OUTPUT_BYTES) if read is not None else None


def _require_groups(
    spec: CommandSpec, body: dict[str, Any], *, group_id: str, actor: str | None
) -> None:
    """Groups a command links to must exist (they are never deleted, so no lock is needed),
    and a client must hold the command's role there too — a coordinator of both groups — so
    no group gets a mission from a stranger (R10.4-06)."""
    for other in spec.other_groups(body) if spec.other_groups else ():
        if heads.committed_head(other) is None:  # a group is created with its head row
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"no group {other!r}",
                requirement="R10.4-06",
                details={"group": other},
            )
        if actor is None or other == group_id:
            continue
        key = membership_key(actor)
        membership = load_view(other, [key])[key]
        try:
            epoch = membership.epoch if membership is not None else 0
            authorize(spec, membership, actor=actor, membership_epoch=epoch)
        except ProtocolError as refusal:
            raise ProtocolError(
                refusal.code,
                f"{refusal.message} (in {other})",
                requirement="R10.4-06",
                details={**refusal.details, "group": other},
            ) from None


def _stale_session(claimed: int | None, current: int | None) -> ProtocolError:
    return ProtocolError(
        ErrorCode.STALE_SESSION,
        f"session epoch {claimed} is not the current {current}",
        requirement="R11.3-10",
        details={"current_epoch": current},
    )


def _announce_on_commit(head: heads.Head) -> None:
    if head.sequence != head.start_sequence:
        group_id, sequence = head.group_id, head.sequence
        transaction.on_commit(lambda: announce_head(group_id, sequence))
        wanted = reactions.wanted(head.appended)
        if wanted:
            transaction.on_commit(lambda: reactions.run(group_id, wanted))
