"""Writes to identities (organisations, agents, groups, sessions, tokens) and the admin
membership commands, which go through the ledger's one write path like every other command.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.ledger import agents
from apps.ledger.models import GroupLog
from apps.ledger.statements import columns_of, hot_cursor, instances_from_rows
from apps.ledger.write_path import Caller, Outcome, submit_as_human
from missionweave.protocol import memberships as membership_rules
from missionweave.protocol.canonical import canonical_bytes, without
from missionweave.protocol.envelope import check_clock_skew
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import agent_principal, parse_principal
from missionweave.protocol.signing import parse_public_key, verify
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.validation import check_fields, check_id, check_text, malformed

from .models import (
    Agent,
    AgentCard,
    AgentKey,
    AgentSession,
    ApiToken,
    Group,
    Membership,
    Organization,
    SessionNonce,
    new_token,
    token_digest,
)

SESSION_TOKEN_PREFIX = "mws"  # noqa: S105 - a prefix, not a secret
API_TOKEN_PREFIX = "mwt"  # noqa: S105
#: the longest name (an organisation's, a group's, an Agent Card's, a capability id) and
#: version (an Agent Card's, a capability's); the OpenAPI document states both
#: (``apps.api.schema_hooks.TEXT_FIELDS``)
MAX_NAME = 200
MAX_VERSION = 64


def _already_exists(what: str, ident: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.ALREADY_EXISTS,
        f"{what} {ident!r} already exists with other content",
        requirement="wire§4",
        details={"id": ident},
    )


def _not_found(what: str, ident: str, path: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.NOT_FOUND, f"no {what} {ident!r}", requirement="wire§4", details={"path": path}
    )


# --- organisations, agents, groups -------------------------------------------------------


def organization_create(*, body: dict[str, Any]) -> tuple[Organization, bool]:
    """Create an organisation; the same body again is a no-op (returns created=False)."""
    check_fields(body, required=("id", "name"))
    ident = check_id(body["id"], "$.id")
    name = check_text(body["name"], "$.name", max_length=MAX_NAME)
    existing = Organization.objects.filter(pk=ident).first()
    if existing is not None:
        if existing.name != name:
            raise _already_exists("organization", ident)
        return existing, False
    return Organization.objects.create(id=ident, name=name), True


def _check_agent_card(card: object) -> dict[str, Any]:
    if not isinstance(card, dict):
        raise malformed("agent_card is an object", "$.agent_card", "R11.1-11")
    check_fields(
        card, required=("name", "version", "capabilities", "max_concurrency"), path="$.agent_card"
    )
    check_text(card["name"], "$.agent_card.name", max_length=MAX_NAME)
    check_text(card["version"], "$.agent_card.version", max_length=MAX_VERSION)
    capabilities = card["capabilities"]
    if not isinstance(capabilities, list):
        raise malformed("capabilities is a list", "$.agent_card.capabilities", "R11.1-11")
    for index, capability in enumerate(capabilities):
        path = f"$.agent_card.capabilities[{index}]"
        if not isinstance(capability, dict):
            raise malformed("a capability is {id, version}", path, "R11.1-11")
        check_fields(capability, required=("id", "version"), path=path)
        check_text(capability["id"], f"{path}.id", max_length=MAX_NAME)
        check_text(capability["version"], f"{path}.version", max_length=MAX_VERSION)
    concurrency = card["max_concurrency"]
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise malformed(
            "max_concurrency is a positive integer", "$.agent_card.max_concurrency", "R11.1-11"
        )
    return card


def agent_register(*, body: dict[str, Any]) -> tuple[Agent, bool]:
    """Register an agent, or add a key or a new Agent Card version to an existing one."""
    check_fields(body, required=("id", "organization", "public_key", "agent_card"))
    ident = check_id(body["id"], "$.id")
    organization_id = check_id(body["organization"], "$.organization")
    try:
        parse_public_key(body["public_key"])
    except (ValueError, TypeError):
        raise malformed(
            "public_key is an Ed25519 public key: 32 raw bytes in base64url without padding, "
            "a point of the prime-order subgroup",
            "$.public_key",
            "wire§1",
        ) from None
    card = _check_agent_card(body["agent_card"])
    if not Organization.objects.filter(pk=organization_id).exists():
        raise _not_found("organization", organization_id, "$.organization")
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(pk=ident).first()
        created = agent is None
        if agent is None:
            agent = Agent.objects.create(id=ident, organization_id=organization_id)
        elif agent.organization_id != organization_id:
            raise _already_exists("agent", ident)
        AgentKey.objects.get_or_create(agent=agent, public_key=body["public_key"])
        stored = agent.cards.filter(version=card["version"]).first()
        if stored is None:
            AgentCard.objects.create(agent=agent, version=card["version"], card=card)
        elif stored.card != card:
            raise _already_exists("agent card version", card["version"])
    return agent, created


def group_create(*, body: dict[str, Any]) -> tuple[Group, bool]:
    """Create a group with an empty log (its head row at sequence 0)."""
    check_fields(body, required=("id", "organization", "name"))
    ident = check_id(body["id"], "$.id")
    organization_id = check_id(body["organization"], "$.organization")
    name = check_text(body["name"], "$.name", max_length=MAX_NAME)
    if not Organization.objects.filter(pk=organization_id).exists():
        raise _not_found("organization", organization_id, "$.organization")
    with transaction.atomic():
        existing = Group.objects.filter(pk=ident).first()
        if existing is not None:
            if (existing.organization_id, existing.name) != (organization_id, name):
                raise _already_exists("group", ident)
            return existing, False
        group = Group.objects.create(id=ident, organization_id=organization_id, name=name)
        GroupLog.objects.create(group=group)
    return group, True


# --- memberships (admin commands through the write path) ---------------------------------


def membership_grant(
    *, group_id: str, admin: Caller, body: object, command_id: str | None = None
) -> Outcome:
    """Grant roles, or replace an existing member's roles (``membership.granted``/``changed``).

    ``command_id`` is a dashboard form's own (a resubmitted form is a replay); the admin
    endpoints mint a fresh one."""
    if not isinstance(body, dict):
        raise malformed("the body is an object", "$", "wire§4")
    # anyone else is FORBIDDEN by the write path, whoever it names (the directory stays unsaid)
    if administers(group_id, admin):
        membership_rules.validate_grant(body)
        _check_principal_exists(body["principal"])
    return _admin_command(admin, group_id, membership_rules.GRANT, body, command_id)


def _check_principal_exists(principal: str) -> None:
    """Roles go only to someone who exists (issue 13 §1): a person is a Django user of that
    name, an agent a registered agent; otherwise NOT_FOUND (wire§4). Checked here, in the
    service every membership grant goes through (API and dashboard), because the pure
    decision sees only the group's log, which does not know the directory."""
    kind, name = parse_principal(principal)
    if kind == "user":
        exists = get_user_model().objects.filter(username=name).exists()
    else:
        exists = Agent.objects.filter(pk=name).exists()
    if not exists:
        raise _not_found("principal", principal, "$.principal")


def membership_revoke(
    *, group_id: str, admin: Caller, principal: str, command_id: str | None = None
) -> Outcome:
    return _admin_command(
        admin, group_id, membership_rules.REVOKE, {"principal": principal}, command_id
    )


def _admin_command(
    admin: Caller, group_id: str, type_: str, body: dict[str, Any], command_id: str | None = None
) -> Outcome:
    return submit_as_human(
        caller=admin,
        group_id=group_id,
        type_=type_,
        body=body,
        command_id=command_id or f"admin-{uuid.uuid4().hex}",
        admin=True,
    )


def memberships_of(principal: str) -> dict[str, dict[str, Any]]:
    """``{group: {"roles", "epoch"}}`` for every group where ``principal`` is a member."""
    rows = Membership.objects.filter(principal=principal, active=True).order_by("group_id")
    return {row.group_id: {"roles": list(row.roles), "epoch": row.epoch} for row in rows}


def membership_of(group_id: str, principal: str) -> Membership | None:
    return Membership.objects.filter(group_id=group_id, principal=principal, active=True).first()


def administers(group_id: str, caller: Caller) -> bool:
    """Whether ``caller`` may change the group's memberships: staff, or an active member
    holding the group's ``admin`` role (wire.md §2; issue 36 §6). The write path decides
    again under the lock; this only tells screens what to offer."""
    if caller.is_staff:
        return True
    membership = membership_of(group_id, caller.principal)
    return membership is not None and bool(
        membership_rules.ADMINISTERS.intersection(membership.roles)
    )


# --- sessions and tokens ------------------------------------------------------------------


@dataclass(frozen=True)
class OpenedSession:
    session: AgentSession
    token: str


def session_issue(*, body: object) -> OpenedSession:
    """The registry's half of ``POST /sessions`` (wire.md §5): a signed body opens a session
    at epoch + 1, and the previous token stops working at once.

    Call :func:`apps.work.sessions.session_open` instead: opening a session also revokes the
    agent's execution leases before the answer (R11.3-10), and leases belong to the work app,
    which sits above this one.
    """
    if not isinstance(body, dict):
        raise malformed("the body is an object", "$", "wire§5")
    check_fields(body, required=("agent", "issued_at", "nonce", "signature"))
    agent_id = check_id(body["agent"], "$.agent")
    try:
        issued_at = parse_timestamp(body["issued_at"])
    except (ValueError, OverflowError):
        raise malformed("issued_at is an RFC 3339 UTC timestamp", "$.issued_at", "wire§1") from None
    nonce = body["nonce"]
    if not isinstance(nonce, str) or not 16 <= len(nonce) <= 128:
        raise malformed("nonce is 16..128 characters", "$.nonce", "wire§5")
    if not isinstance(body["signature"], str):
        raise malformed("signature is a string", "$.signature", "wire§5")
    message = canonical_bytes(without(body, "signature"))
    keys = agents.directory().current_keys(agent_id)
    if not any(verify(key, message, body["signature"]) for key in keys):
        raise ProtocolError(
            ErrorCode.INVALID_SIGNATURE,
            "the signature does not verify under a current key of the agent",
            requirement="wire§5",
        )
    now = timezone.now()
    check_clock_skew(issued_at, now)
    token = new_token(SESSION_TOKEN_PREFIX)
    with transaction.atomic():
        agent = Agent.objects.select_for_update().get(pk=agent_id)
        try:
            with transaction.atomic():
                SessionNonce.objects.create(agent=agent, nonce=nonce)
        except IntegrityError:
            raise ProtocolError(
                ErrorCode.REPLAYED_NONCE,
                "this nonce was already used by this agent",
                requirement="wire§5",
            ) from None
        agent.session_epoch += 1
        agent.save(update_fields=["session_epoch"])
        session = AgentSession.objects.create(
            session_id=f"ses_{uuid.uuid4().hex}",
            agent=agent,
            epoch=agent.session_epoch,
            token_hash=token_digest(token),
            created_at=now,
            expires_at=now + timedelta(seconds=settings.MWP_SESSION_TTL_S),
        )
    return OpenedSession(session, token)


def session_document(session: AgentSession, token: str) -> dict[str, Any]:
    """The ``POST /sessions`` answer (also served, fresh, by ``GET /sessions/current``)."""
    return {
        "session_id": session.session_id,
        "session_epoch": session.epoch,
        "token": token,
        "expires_at": format_timestamp(session.expires_at),
        "memberships": memberships_of(agent_principal(session.agent_id)),
    }


def api_token_create(*, username: str, staff: bool = False, label: str = "") -> str:
    """Create the user if needed (staff when asked) and a new API token for them."""
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(username=username)
    if staff and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    token = new_token(API_TOKEN_PREFIX)
    ApiToken.objects.create(user=user, token_hash=token_digest(token), label=label)
    return token


@dataclass(frozen=True)
class Authenticated:
    caller: Caller
    session: AgentSession | None = None


def _session_by_token(digest_: str) -> tuple[AgentSession, int] | None:
    """The session with this token hash and its agent's current epoch, in one fixed
    statement: every agent request asks it (docs/benchmarks.md, "Where the time goes")."""
    sql = (
        f"SELECT {columns_of(AgentSession, 's')}, a.session_epoch "  # noqa: S608 - _meta names
        "FROM registry_agentsession s JOIN registry_agent a ON a.id = s.agent_id "
        "WHERE s.token_hash = %s"
    )
    with hot_cursor() as cursor:  # bound on the server: prepared after a few requests
        cursor.execute(sql, [digest_])
        row = cursor.fetchone()
    if row is None:
        return None
    (session,) = instances_from_rows(AgentSession, [row])
    return session, int(row[-1])


def authenticate_bearer(token: str) -> Authenticated:
    """wire.md §3 step 1 / §4: a known token, not that of a replaced or expired session."""
    digest_ = token_digest(token)
    if token.startswith(SESSION_TOKEN_PREFIX + "_"):
        found = _session_by_token(digest_)
        session, current_epoch = found if found is not None else (None, None)
        if session is None or session.expires_at <= timezone.now():
            raise ProtocolError(ErrorCode.UNAUTHENTICATED, "unknown or expired token")
        if session.epoch != current_epoch:
            raise ProtocolError(
                ErrorCode.STALE_SESSION,
                "this session was replaced by a newer one",
                requirement="R11.3-10",
            )
        caller = Caller(
            principal=agent_principal(session.agent_id), kind="agent", session_epoch=session.epoch
        )
        return Authenticated(caller, session)
    if token.startswith(API_TOKEN_PREFIX + "_"):
        api_token = ApiToken.objects.select_related("user").filter(token_hash=digest_).first()
        if api_token is not None and api_token.user.is_active:
            return Authenticated(Caller.for_user(api_token.user))
    raise ProtocolError(ErrorCode.UNAUTHENTICATED, "unknown token")
