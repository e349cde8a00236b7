"""Capability tokens signed by the authority key, and the check a tool service asks for.

A token is a JWT (RFC 7519) signed with EdDSA (Ed25519, RFC 8037) under the authority's own
key, the one ``GET /authority`` publishes: any language's JWT library can verify it offline
with that public key, and ``POST /capabilities:check`` tells whether it is still valid now —
which only the authority knows, since a token dies with its lease (R11.3-06, R11.3-09) or when
a rotation revokes it (R11.3-07). The claims come from the pure core
(``missionweave.protocol.capabilities``); here they get ``iss`` and a signature.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import jwt

from missionweave.protocol import capabilities
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.facts import Decision
from missionweave.protocol.validation import check_fields, check_id, malformed
from missionweave.protocol.work.items import work_item_key

from . import head as heads
from .authority import authority_id, signing_key
from .projections import load_view

ALGORITHM = "EdDSA"
MAX_TOKEN_CHARS = 8192
CHECK_FIELDS = ("work_item", "group", *capabilities.WANT_FIELDS)


def mint(claims: dict[str, Any]) -> dict[str, Any]:
    """One signed token as the response carries it: ``{token_id, token, expires_at, scope}``."""
    issuer = authority_id()
    token = jwt.encode(
        {"iss": issuer, **claims}, signing_key(), algorithm=ALGORITHM, headers={"kid": issuer}
    )
    return {
        "token_id": claims["jti"],
        "token": token,
        "expires_at": capabilities.expires_at(claims),
        "scope": claims["scope"],
    }


def minted(decision: Decision) -> Decision:
    """``decision`` with its capability claims signed into ``result["capability_tokens"]``.

    Signing happens in the write path, under the group lock, after the pure decide: the
    response (tokens included) is what the command record stores, so an idempotent replay
    returns the same tokens (R11.3-06, wire §3 step 5).
    """
    if not decision.capabilities:
        return decision
    tokens = [mint(claims) for claims in decision.capabilities]
    return replace(decision, result={**decision.result, "capability_tokens": tokens})


def decode(token: str) -> dict[str, Any]:
    """The claims of a token this authority signed for ``mwp:tools``; INVALID_SIGNATURE else.

    Only EdDSA is accepted (no algorithm confusion). Time is judged afterwards against the
    authority clock (the database's, which stamped ``iat`` and ``exp``), not this process's,
    so PyJWT's own ``exp`` and ``iat`` checks are off here.
    """
    try:
        return jwt.decode(
            token,
            signing_key().public_key(),
            algorithms=[ALGORITHM],
            audience=capabilities.AUDIENCE,
            issuer=authority_id(),
            options={
                "verify_exp": False,
                "verify_iat": False,
                "require": ["iss", "aud", "exp", "jti", "sub"],
            },
        )
    except jwt.InvalidTokenError as error:
        raise ProtocolError(
            ErrorCode.INVALID_SIGNATURE,
            f"not a capability token of this authority: {error}",
            requirement="R11.3-06",
        ) from None


def check_request(body: object) -> dict[str, Any]:
    """The body of ``POST /capabilities:check``: ``token`` and what to test it against."""
    if not isinstance(body, dict):
        raise malformed("the body is an object with a token", "$", "wire§4")
    check_fields(body, required=("token",), optional=CHECK_FIELDS)
    token = body["token"]
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise malformed(f"token is a string of at most {MAX_TOKEN_CHARS} characters", "$.token")
    for name in ("work_item", "group"):
        if name in body:
            check_id(body[name], f"$.{name}")
    for name in capabilities.WANT_FIELDS:
        # present means asked: null is not a name (issue 16 §6; the OpenAPI document says
        # a string), so it is MALFORMED like any other non-string
        value = body.get(name)
        if name in body and (not isinstance(value, str) or not value or len(value) > 200):
            raise malformed(f"{name} is a non-empty string", f"$.{name}")
    return body


def check_token(body: object) -> dict[str, Any]:
    """``{"valid": true, "claims"}`` or ``{"valid": false, "code", "requirement", "reason"}``.

    R11.5-05: a tool service asks before a high-risk, irreversible or externally visible
    action; the answer reads the WorkItem projection at the authority clock. A malformed body
    is a 400 (raised); a token that fails is an answer, not an error.
    """
    request = check_request(body)
    try:
        claims = decode(request["token"])
        capabilities.check_claims_shape(claims)
        capabilities.check_binding(
            claims, group=request.get("group"), work_item=request.get("work_item")
        )
        key = work_item_key(claims["work_item"])
        item = load_view(claims["group"], [key])[key]
        wants = {name: request[name] for name in capabilities.WANT_FIELDS if name in request}
        capabilities.check_claims(claims, item, heads.authority_now(), wants=wants)
    except ProtocolError as refusal:
        return {
            "valid": False,
            "code": refusal.code.value,
            "requirement": refusal.requirement,
            "reason": refusal.message,
        }
    return {"valid": True, "claims": claims}
