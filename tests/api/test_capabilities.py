"""Capability tokens over HTTP, as a tool service written from the docs would use them.

``work.start``, ``lease.renew`` and ``capability.issue`` answer with JWTs signed (EdDSA) by
the authority key: PyJWT verifies them with nothing but the public key of ``GET /authority``.
``POST /capabilities:check`` then says whether a token is valid *now*: bound to the item's
current, live lease (R11.3-06, R11.3-09), not past its own expiry (R11.3-08), not revoked by
a rotation (R11.3-07), covering what the caller wants to do (R11.5-05). Real PostgreSQL, the
real write path, real signatures; the only waiting is a one-second lease running out.
"""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rest_framework.test import APIClient

from missionweave.protocol.signing import parse_public_key
from missionweave.protocol.timefmt import parse_timestamp

from .http import error_of, get, json_of, post
from .work_http import (
    Wire,
    WorkWorld,
    checkpoint_body,
    contract,
    owned,
)

pytestmark = pytest.mark.django_db

CHECK = "/capabilities:check"
WIDE = {"tools": ["search", "fetch"], "data": ["incidents", "hr"], "operations": ["read", "write"]}


def start(wire: Wire, ww: WorkWorld, work_item: str, **body: Any) -> dict[str, Any]:
    """``work.start`` by w2 of a freshly owned item; the ``result`` (lease and tokens)."""
    epoch = owned(wire, ww, work_item, contract=contract(allowed=WIDE))["ownership_epoch"]
    start_body = {"work_item": work_item, "ownership_epoch": epoch, **body}
    return wire.ok(ww.w2, "work.start", start_body)["result"]


def restart(wire: Wire, ww: WorkWorld, work_item: str) -> dict[str, Any]:
    epoch = wire.item(work_item)["ownership_epoch"]
    body = {"work_item": work_item, "ownership_epoch": epoch}
    return wire.ok(ww.w2, "work.start", body)["result"]


def only_token(result: dict[str, Any]) -> dict[str, Any]:
    [token] = result["capability_tokens"]
    assert set(token) == {"token_id", "token", "expires_at", "scope"}
    return token


def check(api: APIClient, bearer: str, token: str, **ask: Any) -> dict[str, Any]:
    return json_of(post(api, CHECK, {"token": token, **ask}, bearer), 200)


def valid(api: APIClient, bearer: str, token: str, **ask: Any) -> dict[str, Any]:
    answer = check(api, bearer, token, **ask)
    assert answer["valid"] is True, answer
    return answer["claims"]


def invalid(
    api: APIClient, bearer: str, token: str, code: str, requirements: tuple[str, ...], **ask: Any
) -> dict[str, Any]:
    answer = check(api, bearer, token, **ask)
    assert answer["valid"] is False, answer
    assert set(answer) == {"valid", "code", "requirement", "reason"}, answer
    assert answer["code"] == code, answer
    assert answer["requirement"] in requirements, answer
    return answer


def authority(api: APIClient) -> dict[str, Any]:
    return json_of(get(api, "/authority"), 200)


# --- issued with work.start, verified by any JWT library ------------------------------------------


def test_start_token_verifies_with_pyjwt_and_the_authority_public_key(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-06: the token of ``work.start`` is an EdDSA JWT of the authority, bound to the
    new lease, group, WorkItem, ownership epoch and holder, scoped to the contract's allowed
    lists (R10.1-01(d)); R11.3-08: its exp is no later than the lease's expiry."""
    result = start(wire, ww, "wi-a")
    token = only_token(result)
    identity = authority(api)
    public_key = parse_public_key(identity["public_key"])

    header = jwt.get_unverified_header(token["token"])
    assert (header["alg"], header["kid"]) == ("EdDSA", identity["authority_id"])
    claims = jwt.decode(
        token["token"],
        public_key,
        algorithms=["EdDSA"],
        audience="mwp:tools",
        issuer=identity["authority_id"],
    )
    lease = result["lease"]
    assert claims["lease_id"] == lease["lease_id"]
    assert (claims["group"], claims["work_item"]) == (ww.group, "wi-a")
    assert claims["sub"] == ww.w2.principal
    assert claims["ownership_epoch"] == wire.item("wi-a")["ownership_epoch"]
    assert claims["session_epoch"] == ww.w2.session_epoch
    assert claims["scope"] == token["scope"] == WIDE
    assert claims["jti"] == token["token_id"]
    assert claims["exp"] <= parse_timestamp(lease["expires_at"]).timestamp()
    assert parse_timestamp(token["expires_at"]) <= parse_timestamp(lease["expires_at"])
    assert parse_timestamp(token["expires_at"]).timestamp() == claims["exp"]
    assert claims["iat"] <= claims["exp"]

    # any authenticated principal may ask: the holder, a human, a tool agent of no group
    for bearer in (ww.w2.token, ww.olga.token, ww.stranger.token):
        assert valid(api, bearer, token["token"], work_item="wi-a", group=ww.group) == claims


def test_a_replayed_start_returns_the_same_token(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """wire§3 step 5: the stored response, tokens included, is returned again (R11.3-06)."""
    epoch = owned(wire, ww, "wi-a")["ownership_epoch"]
    document = ww.w2.command(
        ww.group, "work.start", {"work_item": "wi-a", "ownership_epoch": epoch}
    )
    first = post(api, f"/groups/{ww.group}/commands", document, ww.w2.token)
    again = post(api, f"/groups/{ww.group}/commands", document, ww.w2.token)
    assert json_of(first, 201) == json_of(again, 201)
    assert again["Idempotent-Replayed"] == "true"


def test_renewal_returns_a_token_to_the_new_expiry_and_keeps_the_old_one(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-08: the renewal's token reaches the renewed expiry, no further; the lease keeps
    its id, so the start's token stays valid until its own exp (R11.3-06)."""
    first = start(wire, ww, "wi-a", lease_ttl_s=60)
    lease_id = first["lease"]["lease_id"]
    renew = {"work_item": "wi-a", "lease_id": lease_id, "lease_ttl_s": 600}
    renewed = wire.ok(ww.w2, "lease.renew", renew)["result"]
    token = only_token(renewed)
    assert parse_timestamp(token["expires_at"]) <= parse_timestamp(renewed["lease"]["expires_at"])
    assert parse_timestamp(token["expires_at"]) > parse_timestamp(only_token(first)["expires_at"])
    assert valid(api, ww.olga.token, token["token"])["lease_id"] == lease_id
    valid(api, ww.olga.token, only_token(first)["token"])


# --- narrowing and rotation: capability.issue (R11.3-07) ------------------------------------------


def test_narrowed_tokens_cover_only_their_scope(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """R11.3-07: a narrowed token is a subset of the contract's allowed lists; R11.5-05: the
    check refuses an action outside the token's scope."""
    lease_id = start(wire, ww, "wi-a")["lease"]["lease_id"]
    scope = {"tools": ["fetch"], "data": ["incidents"], "operations": ["read"]}
    body = {"work_item": "wi-a", "lease_id": lease_id, "scope": scope, "ttl_s": 120}
    answer = wire.ok(ww.w2, "capability.issue", body)
    token = only_token(answer["result"])
    assert token["scope"] == scope
    [event] = answer["events"]
    assert event["type"] == "capability.issued"

    valid(api, ww.olga.token, token["token"], tool="fetch", data="incidents", operation="read")
    invalid(api, ww.olga.token, token["token"], "FORBIDDEN", ("R11.5-05",), tool="search")
    invalid(api, ww.olga.token, token["token"], "FORBIDDEN", ("R11.5-05",), operation="write")
    invalid(api, ww.olga.token, token["token"], "FORBIDDEN", ("R11.5-05",), data="hr")

    # the log records the token's id, scope and expiry, never the token itself
    [logged] = [e for e in wire.events() if e["type"] == "capability.issued"]
    assert logged["payload"]["token_id"] == token["token_id"]
    assert logged["payload"]["expires_at"] == token["expires_at"]
    assert token["token"] not in json.dumps(logged)


def test_a_scope_wider_than_the_contract_is_refused(wire: Wire, ww: WorkWorld) -> None:
    """R11.3-07: never widened beyond the contract; refused with nothing appended."""
    lease_id = start(wire, ww, "wi-a")["lease"]["lease_id"]
    scope = {"tools": ["search", "shell"], "data": [], "operations": []}
    body = {"work_item": "wi-a", "lease_id": lease_id, "scope": scope}
    error = wire.refused(ww.w2, "capability.issue", body, 403, "FORBIDDEN", "R11.3-07")
    assert error["details"]["not_allowed"] == ["shell"]
    bad = {**body, "scope": {"tools": ["search"]}}
    wire.refused(ww.w2, "capability.issue", bad, 400, "MALFORMED")


def test_rotation_revokes_the_old_token(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """R11.3-07: rotating with ``revoke`` [old id] makes the old token invalid at once; the
    new one is valid under the same lease."""
    result = start(wire, ww, "wi-a")
    old = only_token(result)
    body = {
        "work_item": "wi-a",
        "lease_id": result["lease"]["lease_id"],
        "revoke": [old["token_id"]],
    }
    new = only_token(wire.ok(ww.w2, "capability.issue", body)["result"])
    assert new["token_id"] != old["token_id"]
    invalid(api, ww.olga.token, old["token"], "FORBIDDEN", ("R11.3-07",))
    valid(api, ww.olga.token, new["token"])
    assert wire.item("wi-a")["lease"]["revoked_tokens"] == [old["token_id"]]


def test_only_the_owner_with_the_current_lease_issues_tokens(wire: Wire, ww: WorkWorld) -> None:
    """wire§8, R11.3-05: another worker is FORBIDDEN; a lease released at a checkpoint is no
    longer current, so its id is STALE_LEASE before the state (issue 16 §7), and so is an
    earlier lease id once the item has a new lease."""
    first = start(wire, ww, "wi-a")["lease"]["lease_id"]
    body = {"work_item": "wi-a", "lease_id": first}
    wire.refused(ww.w3, "capability.issue", body, 403, "FORBIDDEN")
    wire.ok(ww.w2, "work.checkpoint", checkpoint_body("wi-a", first))
    wire.refused(ww.w2, "capability.issue", body, 409, "STALE_LEASE", "R11.3-05")
    restart(wire, ww, "wi-a")
    wire.refused(ww.w2, "capability.issue", body, 409, "STALE_LEASE", "R11.3-05")


# --- when a token stops being valid ---------------------------------------------------------------


def test_refused_after_a_checkpoint_releases_the_lease(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-09: checkpoint releases the lease, and its tokens with it."""
    result = start(wire, ww, "wi-a")
    token = only_token(result)["token"]
    wire.ok(ww.w2, "work.checkpoint", checkpoint_body("wi-a", result["lease"]["lease_id"]))
    invalid(api, ww.olga.token, token, "STALE_LEASE", ("R11.3-09",))


def test_refused_after_a_new_lease_replaced_the_old_one(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-05, R11.3-06: a token of lease A is refused once the item's lease is B."""
    result = start(wire, ww, "wi-a")
    old = only_token(result)["token"]
    wire.ok(ww.w2, "work.checkpoint", checkpoint_body("wi-a", result["lease"]["lease_id"]))
    again = restart(wire, ww, "wi-a")
    assert again["lease"]["lease_id"] != result["lease"]["lease_id"]
    invalid(api, ww.olga.token, old, "STALE_LEASE", ("R11.3-05",))
    valid(api, ww.olga.token, only_token(again)["token"])


def test_refused_after_a_new_session_revokes_the_lease(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-10, R11.3-09: opening a replacement session revokes the agent's leases before
    POST /sessions answers; their tokens are refused from then on."""
    token = only_token(start(wire, ww, "wi-a"))["token"]
    valid(api, ww.olga.token, token)
    json_of(post(api, "/sessions", ww.w2.session_body()), 201)
    answer = invalid(api, ww.olga.token, token, "STALE_LEASE", ("R11.3-09",))
    assert "revoked" in answer["reason"]
    assert wire.item("wi-a")["state"] == "queued"


def test_refused_after_the_lease_expires(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """R11.3-08, R11.3-09: a one-second lease runs out by the authority clock; its token
    (which never outlives it) is refused."""
    result = start(wire, ww, "wi-a", lease_ttl_s=1)
    token = only_token(result)
    assert parse_timestamp(token["expires_at"]) <= parse_timestamp(result["lease"]["expires_at"])
    time.sleep(1.2)
    invalid(api, ww.olga.token, token["token"], "STALE_LEASE", ("R11.3-08", "R11.3-09"))


def test_refused_for_another_work_item_or_group(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """R11.3-06: a token is bound to its own WorkItem (and group)."""
    token = only_token(start(wire, ww, "wi-a"))["token"]
    start(wire, ww, "wi-b")
    invalid(api, ww.olga.token, token, "FORBIDDEN", ("R11.3-06",), work_item="wi-b")
    invalid(api, ww.olga.token, token, "FORBIDDEN", ("R11.3-06",), group="g-other")
    valid(api, ww.olga.token, token, work_item="wi-a")


def test_a_tampered_or_foreign_token_is_invalid(api: APIClient, wire: Wire, ww: WorkWorld) -> None:
    """R11.3-06: only the authority's EdDSA signature over the exact claims counts: a changed
    payload, another key, another algorithm or no token at all is INVALID_SIGNATURE."""
    token = only_token(start(wire, ww, "wi-a"))["token"]
    header, payload, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False})
    forged_payload = jwt.utils.base64url_encode(
        json.dumps({**claims, "work_item": "wi-b"}).encode()
    ).decode()
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    foreign_key = Ed25519PrivateKey.generate()
    forgeries = [
        f"{header}.{forged_payload}.{signature}",
        f"{header}.{payload}.{flipped}",
        jwt.encode(claims, foreign_key, algorithm="EdDSA"),
        jwt.encode(claims, "a-shared-secret-of-32-bytes-length!", algorithm="HS256"),
        jwt.encode(claims, None, algorithm="none"),
        jwt.encode({**claims, "aud": "elsewhere"}, foreign_key, algorithm="EdDSA"),
        "not-a-jwt",
    ]
    for forged in forgeries:
        invalid(api, ww.olga.token, forged, "INVALID_SIGNATURE", ("R11.3-06",))
    valid(api, ww.olga.token, token)


@pytest.mark.parametrize(
    "raw",
    [
        b"[]",
        b'"token"',
        b"{}",
        b'{"token": 1}',
        b'{"token": ""}',
        b'{"token": "x", "extra": 1}',
        b'{"token": "x", "tool": 7}',
        b'{"token": "x", "work_item": "not an id"}',
        b'{"token": "x", "token": "y"}',
        b"{not json",
    ],
)
def test_a_malformed_check_body_is_400(api: APIClient, ww: WorkWorld, raw: bytes) -> None:
    """wire§8: a malformed body is 400 MALFORMED in the error shape, never a 5xx."""
    error_of(post(api, CHECK, raw, ww.olga.token), 400, "MALFORMED")


def test_the_check_needs_a_token_and_json(api: APIClient, ww: WorkWorld) -> None:
    """wire§4: 401 without a bearer token (before the body is read); 415 without JSON."""
    error_of(post(api, CHECK, {"token": "x"}), 401, "UNAUTHENTICATED")
    response = post(api, CHECK, b"token=x", ww.olga.token, content_type="text/plain")
    error_of(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    error_of(get(api, CHECK, ww.olga.token), 405, "METHOD_NOT_ALLOWED")
