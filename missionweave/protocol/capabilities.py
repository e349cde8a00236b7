"""Capability tokens: what an owner may use under its execution lease (R11.3-06..08, R11.5-05).

A capability token is bound to one execution lease, never the other way round (R11.3-06): its
claims name the group, the WorkItem, the lease id and the ownership epoch, and it expires no
later than that lease did when the token was issued (R11.3-08). Under a live lease the owner
may rotate or narrow its tokens with ``capability.issue`` (R11.3-07): a narrowed scope is a
subset of the contract's ``allowed`` tools, data and operations (R10.1-01(d)), and the ids it
names in ``revoke`` are recorded on the lease, so a checker refuses them from then on.

This module is pure: it builds the claims (``jti`` derived from the command id, so a replay
names the same token) and judges decoded claims against the WorkItem. Signing and decoding
(a JWT with EdDSA under the authority key) happen in ``apps/ledger/capabilities.py``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from . import states as S
from .canonical import digest
from .errors import ErrorCode, ProtocolError
from .facts import Command, Decision, NewEvent, View
from .timefmt import format_timestamp, parse_timestamp
from .validation import check_fields, check_id, malformed
from .work.checks import MAX_LEASE_TTL_S, owner_with_lease
from .work.items import WorkItem

ISSUE = "capability.issue"
ISSUED = "capability.issued"
#: the JWT ``aud`` of every token: the tools and data services that check them
AUDIENCE = "mwp:tools"
#: the three lists of a contract's ``allowed`` (R10.1-01(d)), in the order tokens carry them
SCOPE_KINDS = ("tools", "data", "operations")
#: what ``POST /capabilities:check`` may ask a token to cover: body field → scope kind
WANT_FIELDS = {"tool": "tools", "data": "data", "operation": "operations"}
MIN_TOKEN_TTL_S = 1
MAX_TOKEN_TTL_S = MAX_LEASE_TTL_S
MAX_REVOKES = 100
MAX_SCOPE_ENTRIES = 256
#: the claims every token carries (``iss`` is added by the signer: the authority id)
CLAIMS = (
    "sub", "aud", "group", "work_item", "lease_id", "ownership_epoch", "session_epoch", "scope",
    "iat", "exp", "jti",
)  # fmt: skip


# --- scope -----------------------------------------------------------------------------------


def contract_scope(item: WorkItem) -> dict[str, list[str]]:
    """The full scope a lease allows: the contract's ``allowed`` lists (R10.1-01(d))."""
    allowed = item.contract.get("allowed", {})
    return {kind: list(allowed.get(kind, ())) for kind in SCOPE_KINDS}


def check_scope(value: object, path: str) -> dict[str, list[str]]:
    """The shape of a requested scope: all three kinds, each a list of names (MALFORMED).

    Every kind is required: a narrowed token says exactly what it grants, so a kind left out
    cannot be read as either "all of it" or "none of it".
    """
    if not isinstance(value, dict):
        raise malformed("scope is {tools, data, operations}", path, "R11.3-07")
    check_fields(value, required=SCOPE_KINDS, path=path)
    scope: dict[str, list[str]] = {}
    for kind in SCOPE_KINDS:
        names = value[kind]
        where = f"{path}.{kind}"
        if not isinstance(names, list) or len(names) > MAX_SCOPE_ENTRIES:
            raise malformed(f"a list of at most {MAX_SCOPE_ENTRIES} names", where, "R11.3-07")
        for index, name in enumerate(names):
            if not isinstance(name, str) or not name or len(name) > 200:
                raise malformed("a name is a non-empty string", f"{where}[{index}]", "R11.3-07")
        scope[kind] = list(dict.fromkeys(names))
    return scope


def narrowed_scope(item: WorkItem, requested: dict[str, list[str]]) -> dict[str, list[str]]:
    """``requested`` if it is a subset of the contract's ``allowed``, else FORBIDDEN.

    R11.3-07: a token may be narrowed, never widened beyond what the contract allows.
    """
    allowed = contract_scope(item)
    for kind in SCOPE_KINDS:
        extra = [name for name in requested[kind] if name not in allowed[kind]]
        if extra:
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"the contract of {item.id} does not allow {kind} {', '.join(extra)}",
                requirement="R11.3-07",
                details={"path": f"$.scope.{kind}", "not_allowed": extra, "allowed": allowed},
            )
    return requested


# --- claims ----------------------------------------------------------------------------------


def token_id_for(command: Command, index: int) -> str:
    """A stable token id (``jti``): the same command replayed names the same token.

    Command ids are unique per (group, actor), so both are part of the source.
    """
    source = {"group": command.group, "actor": command.actor, "command": command.id, "n": index}
    return "cap_" + digest(source)[7:39]


def numeric_date(moment: datetime) -> int:
    """RFC 7519 NumericDate, rounded down: a rounded ``exp`` never passes the lease's end."""
    return math.floor(moment.timestamp())


def from_numeric_date(value: int) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def token_claims(
    command: Command,
    *,
    item: WorkItem,
    lease_id: str,
    session_epoch: int | None,
    lease_expires_at: str,
    scope: dict[str, list[str]],
    ttl: timedelta | None = None,
    index: int = 0,
) -> dict[str, Any]:
    """The claims of one token under ``lease_id``, issued at ``command.now``.

    R11.3-06: bound to the lease (and its group, WorkItem, ownership epoch and holder).
    R11.3-08: ``exp`` is never later than the lease's expiry at issue time.
    """
    not_after = parse_timestamp(lease_expires_at)
    if ttl is not None:
        not_after = min(not_after, command.now + ttl)
    return {
        "sub": command.actor,
        "aud": AUDIENCE,
        "group": command.group,
        "work_item": item.id,
        "lease_id": lease_id,
        "ownership_epoch": item.ownership_epoch,
        "session_epoch": session_epoch,
        "scope": scope,
        "iat": numeric_date(command.now),
        "exp": numeric_date(not_after),
        "jti": token_id_for(command, index),
    }


def expires_at(claims: dict[str, Any]) -> str:
    """A token's ``exp`` as a wire.md §1 timestamp."""
    return format_timestamp(from_numeric_date(claims["exp"]))


# --- capability.issue (R11.3-07) -------------------------------------------------------------


def validate_issue(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "lease_id"), optional=("scope", "revoke", "ttl_s"))
    check_id(body["work_item"], "$.work_item")
    check_id(body["lease_id"], "$.lease_id")
    if "scope" in body:
        check_scope(body["scope"], "$.scope")
    revoke = body.get("revoke", [])
    if not isinstance(revoke, list) or len(revoke) > MAX_REVOKES:
        raise malformed(f"revoke is a list of at most {MAX_REVOKES} token ids", "$.revoke")
    for index, token_id in enumerate(revoke):
        check_id(token_id, f"$.revoke[{index}]")
    _ttl(body)


def _ttl(body: dict[str, Any]) -> timedelta | None:
    value = body.get("ttl_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise malformed("ttl_s is a whole number of seconds", "$.ttl_s")
    if not MIN_TOKEN_TTL_S <= value <= MAX_TOKEN_TTL_S:
        raise malformed(f"ttl_s is from {MIN_TOKEN_TTL_S} to {MAX_TOKEN_TTL_S} seconds", "$.ttl_s")
    return timedelta(seconds=value)


def decide_issue(view: View, command: Command) -> Decision:
    """R11.3-07: rotate or narrow the owner's tokens while its lease is live.

    The owner's checks come first, in wire.md §8 order (ownership, current lease id, state,
    live lease): no token is ever issued for a lease that is not the item's live one
    (R11.3-06). The event records the new token id, its scope and expiry and the revoked ids
    (never the token itself); the signed token travels only in the response.
    """
    item, lease = owner_with_lease(view, command)
    requested = command.body.get("scope")
    scope = (
        contract_scope(item)
        if requested is None
        else narrowed_scope(item, check_scope(requested, "$.scope"))
    )
    claims = token_claims(
        command,
        item=item,
        lease_id=lease.lease_id,
        session_epoch=lease.session_epoch,
        lease_expires_at=lease.expires_at,
        scope=scope,
        ttl=_ttl(command.body),
    )
    revokes = list(dict.fromkeys(command.body.get("revoke", [])))
    payload = {
        "work_item": item.id,
        "lease_id": lease.lease_id,
        "token_id": claims["jti"],
        "scope": scope,
        "expires_at": expires_at(claims),
        "revokes": revokes,
    }
    result = {"lease": {"lease_id": lease.lease_id, "expires_at": lease.expires_at}}
    return Decision([NewEvent(ISSUED, payload)], result, capabilities=(claims,))


# --- checking a decoded token (R11.5-05) -----------------------------------------------------


def refused(code: ErrorCode, message: str, requirement: str, **details: Any) -> ProtocolError:
    return ProtocolError(code, message, requirement=requirement, details=details)


def check_claims_shape(claims: dict[str, Any]) -> None:
    """A verified token of this authority carries every claim (MALFORMED otherwise)."""
    missing = [name for name in CLAIMS if name not in claims]
    scope = claims.get("scope")
    if (
        missing
        or not isinstance(claims["exp"], int)
        or not isinstance(claims["work_item"], str)
        or not isinstance(claims["group"], str)
        or not isinstance(claims["lease_id"], str)
        or not isinstance(scope, dict)
        or any(not isinstance(scope.get(kind), list) for kind in SCOPE_KINDS)
    ):
        raise refused(
            ErrorCode.MALFORMED,
            "not a capability token: claims are missing or of the wrong type",
            "R11.3-06",
            missing=missing,
        )


def check_binding(claims: dict[str, Any], *, group: str | None, work_item: str | None) -> None:
    """R11.3-06: a token is good for its own group and WorkItem only."""
    if group is not None and claims["group"] != group:
        raise refused(
            ErrorCode.FORBIDDEN,
            f"the token is bound to group {claims['group']}, not {group}",
            "R11.3-06",
            group=claims["group"],
        )
    if work_item is not None and claims["work_item"] != work_item:
        raise refused(
            ErrorCode.FORBIDDEN,
            f"the token is bound to WorkItem {claims['work_item']}, not {work_item}",
            "R11.3-06",
            work_item=claims["work_item"],
        )


def check_claims(
    claims: dict[str, Any],
    item: WorkItem | None,
    now: datetime,
    *,
    group: str | None = None,
    work_item: str | None = None,
    wants: dict[str, str] | None = None,
) -> None:
    """Whether a token whose signature verified is valid now; ``ProtocolError`` saying why not.

    In order: the token's own binding (R11.3-06) and expiry (R11.3-08); then the lease it is
    bound to must be the WorkItem's current one (a replaced lease is R11.3-05), still active
    and unexpired by the authority clock (R11.3-09: released, expired or revoked leases take
    their tokens with them), held by the token's subject in the same ownership epoch
    (R11.3-01); the token id must not have been revoked by a rotation (R11.3-07); and what the
    caller wants to do must be inside the token's scope (R11.5-05).
    """
    check_claims_shape(claims)
    check_binding(claims, group=group, work_item=work_item)
    token_id, lease_id = claims["jti"], claims["lease_id"]
    if claims["exp"] <= numeric_date(now):
        raise refused(
            ErrorCode.STALE_LEASE,
            f"token {token_id} expired at {expires_at(claims)}",
            "R11.3-08",
            expires_at=expires_at(claims),
        )
    if item is None:
        raise refused(
            ErrorCode.NOT_FOUND,
            f"no WorkItem {claims['work_item']!r} in {claims['group']}",
            "wire§4",
            work_item=claims["work_item"],
        )
    lease = item.lease
    if lease is None or lease.lease_id != lease_id:
        raise refused(
            ErrorCode.STALE_LEASE,
            f"lease {lease_id} is not the current lease of {item.id}",
            "R11.3-05",
            current_lease=lease.lease_id if lease is not None else None,
        )
    if lease.status != "active" or item.state != S.ACTIVE:
        raise refused(
            ErrorCode.STALE_LEASE,
            f"lease {lease_id} is {lease.status} ({lease.closed_by or item.state})",
            "R11.3-09",
            lease_status=lease.status,
            closed_by=lease.closed_by,
        )
    if parse_timestamp(lease.expires_at) <= now:
        raise refused(
            ErrorCode.STALE_LEASE,
            f"lease {lease_id} expired at {lease.expires_at}",
            "R11.3-09",
            expires_at=lease.expires_at,
        )
    if (
        item.owner != claims["sub"]
        or lease.agent != claims["sub"]
        or item.ownership_epoch != claims["ownership_epoch"]
    ):
        raise refused(
            ErrorCode.STALE_OWNERSHIP,
            f"{claims['sub']} no longer holds {item.id} in ownership epoch "
            f"{claims['ownership_epoch']}",
            "R11.3-01",
            ownership_epoch=item.ownership_epoch,
        )
    if token_id in lease.revoked_tokens:
        raise refused(
            ErrorCode.FORBIDDEN, f"token {token_id} was revoked", "R11.3-07", token_id=token_id
        )
    for field_name, name in (wants or {}).items():
        kind = WANT_FIELDS[field_name]
        if name not in claims["scope"][kind]:
            raise refused(
                ErrorCode.FORBIDDEN,
                f"{field_name} {name!r} is outside the token's scope",
                "R11.5-05",
                kind=kind,
                scope=claims["scope"],
            )
