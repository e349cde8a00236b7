"""Would the write path accept this person's command? Asked without writing anything.

A screen that offers a form (grant an execution approval, end a mission) must not decide
for itself who may: it would drift from the protocol core the first time a rule changes.
It asks here instead, and this module runs the questions :mod:`apps.ledger.write_path` asks
for the same person and body — membership, role and epoch (``authorize``), the body's shape
(``spec.validate``) and the command's own rules (``decide``, on the aggregates
``spec.keys`` names) — with none of its effects: no head lock, no append, no projection or
idempotency record, no broadcast.

Without the lock the answer is as of the read: a command submitted a moment later may still
be refused (someone else approved first), and the write path then says why. A preview is a
reason to show a form, never a permission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.utils import timezone

from missionweave.protocol import decider
from missionweave.protocol.authorization import authorize
from missionweave.protocol.commands import COMMANDS, PUBLIC_COMMAND_TYPES, CommandSpec
from missionweave.protocol.envelope import human_envelope
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.facts import StateKey
from missionweave.protocol.memberships import Membership, current_epoch, membership_key

from .head import authority_now, committed_head
from .projections import load_view
from .write_path import Caller, command_of, human_document, judge, verify

#: the command id of a previewed command: never recorded, so it meets no idempotency record
PREVIEW_COMMAND_ID = "preview"


def refusal(
    caller: Caller, group_id: str, type_: str, body: dict[str, Any]
) -> ProtocolError | None:
    """Why the write path would refuse ``type_`` with ``body`` from ``caller`` now, or
    ``None`` if it would accept it.

    The same envelope ``submit_as_human`` builds goes through the write path's own
    ``verify`` and ``judge`` (wire.md §3 steps 2–9 and decide), without the lock and without
    steps 5–6 (idempotency, agent sessions), which a person's fresh command always passes.
    Only a person's commands to their own group are previewed (``ValueError`` otherwise).
    """
    _previewable(caller, type_)
    document = human_document(
        caller=caller, group_id=group_id, type_=type_, body=body, command_id=PREVIEW_COMMAND_ID
    )
    try:
        verified = verify(group_id, document, caller, admin=False)
        judge(
            group_id,
            verified,
            caller,
            now=authority_now(),
            head_sequence=committed_head(group_id) or 0,
        )
    except ProtocolError as refused:
        return refused
    return None


def would_accept(caller: Caller, group_id: str, type_: str, body: dict[str, Any]) -> bool:
    """Whether :func:`refusal` finds nothing to refuse."""
    return refusal(caller, group_id, type_, body) is None


def permitted(caller: Caller, group_id: str, types: Iterable[str]) -> frozenset[str]:
    """The command types among ``types`` that ``caller``'s membership of ``group_id`` may
    issue now (:func:`permitted_by`, after one read of the membership)."""
    key = membership_key(caller.principal)
    return permitted_by(caller, load_view(group_id, [key])[key], types)


def permitted_by(
    caller: Caller, membership: Membership | None, types: Iterable[str]
) -> frozenset[str]:
    """The command types among ``types`` that ``membership`` lets ``caller`` issue: the
    command table's roles and human-only flag, judged by ``authorize`` as the write path
    judges them (wire.md §3 steps 7–8), whatever the body. A page that has read the
    membership already asks this, without reading it again."""
    allowed = set()
    for type_ in types:
        try:
            _authorize(_previewable(caller, type_), membership, caller)
        except ProtocolError:
            continue
        allowed.add(type_)
    return frozenset(allowed)


def refusals(
    caller: Caller,
    group_id: str,
    type_: str,
    bodies: Sequence[dict[str, Any]],
    *,
    membership: Membership | None,
    loaded: Mapping[StateKey, Any],
) -> list[ProtocolError | None]:
    """:func:`refusal` for each of ``bodies`` (one command type), for a screen that lists many
    aggregates it has already read — the inbox asks it of every WorkItem waiting for an
    execution approval in a group.

    The questions and their order are ``judge``'s (wire.md §3 steps 7–9, then ``decide``);
    what changes is how often the same things are read: ``membership`` (the caller's, already
    read by the page), the authority clock and the head once for all bodies, and each
    ``decide`` runs against the aggregates in ``loaded`` rather than a read per body. A body
    whose ``decide`` needs a key ``loaded`` lacks is asked through :func:`refusal`, with its
    own reads. One preview per body would cost the inbox four queries per waiting WorkItem.
    """
    spec = _previewable(caller, type_)
    try:
        _authorize(spec, membership, caller)
    except ProtocolError as refused:
        return [refused for _ in bodies]
    roles = frozenset(membership.roles) if membership is not None else frozenset()
    now, head = authority_now(), committed_head(group_id) or 0
    answers: list[ProtocolError | None] = []
    for body in bodies:
        document = human_envelope(
            command_id=PREVIEW_COMMAND_ID,
            type_=type_,
            group=group_id,
            username=caller.username,
            membership_epoch=current_epoch(membership),
            issued_at=timezone.now(),
            body=body,
        )
        try:
            envelope = verify(group_id, document, caller, admin=False).envelope
            spec.validate(envelope.body)
            command = command_of(envelope, group_id, roles=roles, now=now, head_sequence=head)
            view = {key: loaded[key] for key in spec.keys(command, {}) if key in loaded}
            if spec.keys(command, view) - view.keys():
                answers.append(refusal(caller, group_id, type_, body))
                continue
            decider.decide(view, command)
        except ProtocolError as refused:
            answers.append(refused)
            continue
        answers.append(None)
    return answers


def _previewable(caller: Caller, type_: str) -> CommandSpec:
    spec = COMMANDS[type_]
    if caller.kind != "user" or type_ not in PUBLIC_COMMAND_TYPES or spec.other_groups:
        raise ValueError(f"{type_} from {caller.principal} is not previewed")
    return spec


def _authorize(spec: CommandSpec, membership: Membership | None, caller: Caller) -> None:
    """``authorize`` with the epoch ``submit_as_human`` puts in a person's envelope: their
    current one, so a preview is never refused as STALE_MEMBERSHIP."""
    authorize(spec, membership, actor=caller.principal, membership_epoch=current_epoch(membership))
