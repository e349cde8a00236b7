"""Commands people issue from the dashboard, through the one write path like every other.

A logged-in person is the principal ``user:<username>`` (wire.md §2). The dashboard builds
the unsigned human envelope of wire.md §3 for them — their *current* membership epoch read
from the membership projection, ``issued_at`` now — and hands it to
:func:`apps.ledger.write_path.submit_command` with a ``user`` caller. Everything else
(membership, role, idempotency, the command's own rules) is the write path's to decide; a
refusal comes back as the same :class:`ProtocolError` the API renders.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from apps.ledger.write_path import Caller, Outcome, submit_as_human
from missionweave.protocol.identifiers import is_id

from .selectors import user_principal


def new_command_id() -> str:
    """A fresh command id. Forms carry one from the page that showed them, so a resubmitted
    form (a double click, the back button) is an idempotent replay, not a second command."""
    return f"dash-{secrets.token_hex(12)}"


def submit_as_user(
    *,
    user: AbstractBaseUser | AnonymousUser,
    group_id: str,
    type_: str,
    body: dict[str, Any],
    command_id: str | None = None,
) -> Outcome:
    """Submit ``type_`` with ``body`` to ``group_id`` as ``user``; ``ProtocolError`` if refused.

    Without an active membership the epoch is 0 and the write path answers NOT_A_MEMBER.
    """
    principal = user_principal(user.get_username())
    caller = Caller(principal=principal, kind="user", is_staff=bool(user.is_staff))
    return submit_as_human(
        caller=caller,
        group_id=group_id,
        type_=type_,
        body=body,
        command_id=command_id if is_id(command_id) else new_command_id(),
    )
