"""``POST /sessions`` and ``GET /sessions/current`` (wire.md §4, §5)."""

from __future__ import annotations

import secrets

import pytest
from rest_framework.test import APIClient

from apps.registry.models import Agent
from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.signing import generate_private_key, sign
from missionweave.protocol.timefmt import parse_timestamp
from tests.factories import World, mission_body, now_text

from .http import error_of, get, json_of, post, submit

pytestmark = pytest.mark.django_db


def signed_body(key, **fields) -> dict:  # type: ignore[no-untyped-def]
    body = {"agent": "w1", "issued_at": now_text(), "nonce": secrets.token_urlsafe(18), **fields}
    return {**body, "signature": sign(key, canonical_bytes(body))}


def test_open_session_answers_201_with_the_session_document(api: APIClient, world: World) -> None:
    """wire§4/§5: 201 {session_id, session_epoch, token, expires_at, memberships}."""
    previous = world.w1.session_epoch
    body = json_of(post(api, "/sessions", world.w1.session_body()), 201)
    assert set(body) == {"session_id", "session_epoch", "token", "expires_at", "memberships"}
    assert body["session_epoch"] == previous + 1
    assert isinstance(body["token"], str)
    assert body["token"]
    assert parse_timestamp(body["expires_at"]) > parse_timestamp(now_text())
    assert body["memberships"] == {world.group: {"roles": ["coordinator"], "epoch": 1}}


def test_new_session_replaces_the_old_token_and_raises_the_epoch(
    api: APIClient, world: World
) -> None:
    """wire§5 / R11.3-10: each new session raises the epoch by one and invalidates the old token."""
    old_token, old_epoch = world.w1.token, world.w1.session_epoch
    body = json_of(post(api, "/sessions", world.w1.session_body()), 201)
    assert body["session_epoch"] == old_epoch + 1
    assert Agent.objects.get(pk="w1").session_epoch == old_epoch + 1
    stale = error_of(get(api, "/sessions/current", old_token), 401, "STALE_SESSION")
    assert stale["requirement"] == "R11.3-10"
    assert json_of(get(api, "/sessions/current", body["token"]), 200)["session_epoch"] == (
        old_epoch + 1
    )
    # the new token submits with the new epoch
    world.w1.token, world.w1.session_epoch = body["token"], body["session_epoch"]
    document = world.w1.command(world.group, "mission.create", mission_body())
    assert submit(api, world.group, document, body["token"]).status_code == 201


def test_unknown_agent_is_invalid_signature(api: APIClient, world: World) -> None:
    """wire§5: an unknown agent is INVALID_SIGNATURE too (existence is not revealed)."""
    response = post(api, "/sessions", signed_body(generate_private_key(), agent="nobody"))
    assert error_of(response, 401, "INVALID_SIGNATURE")["requirement"] == "wire§5"


def test_signature_by_another_key_is_invalid(api: APIClient, world: World) -> None:
    """wire§5: the signature must verify under a current key of the agent."""
    response = post(api, "/sessions", signed_body(generate_private_key()))
    error_of(response, 401, "INVALID_SIGNATURE")
    assert Agent.objects.get(pk="w1").session_epoch == world.w1.session_epoch


def test_tampered_session_body_is_invalid_signature(api: APIClient, world: World) -> None:
    """wire§5: the signature covers the canonical body without itself."""
    body = world.w1.session_body()
    body["nonce"] = secrets.token_urlsafe(18)
    error_of(post(api, "/sessions", body), 401, "INVALID_SIGNATURE")


@pytest.mark.parametrize("offset", [301, -301])
def test_session_issued_outside_the_window_is_clock_skew(
    api: APIClient, world: World, offset: int
) -> None:
    """wire§5: issued_at within the skew window."""
    response = post(api, "/sessions", world.w1.session_body(issued_at=now_text(offset)))
    assert error_of(response, 401, "CLOCK_SKEW")["requirement"] == "wire§3"
    assert Agent.objects.get(pk="w1").session_epoch == world.w1.session_epoch


def test_reused_nonce_is_replayed_nonce(api: APIClient, world: World) -> None:
    """wire§5: a nonce seen before for that agent is REPLAYED_NONCE, and no session opens."""
    nonce = secrets.token_urlsafe(18)
    json_of(post(api, "/sessions", world.w1.session_body(nonce=nonce)), 201)
    epoch = Agent.objects.get(pk="w1").session_epoch
    response = post(api, "/sessions", world.w1.session_body(nonce=nonce))
    assert error_of(response, 401, "REPLAYED_NONCE")["requirement"] == "wire§5"
    assert Agent.objects.get(pk="w1").session_epoch == epoch


def test_same_nonce_for_another_agent_is_fine(api: APIClient, world: World) -> None:
    """wire§5: nonces are remembered per agent."""
    nonce = secrets.token_urlsafe(18)
    json_of(post(api, "/sessions", world.w1.session_body(nonce=nonce)), 201)
    json_of(post(api, "/sessions", world.w2.session_body(nonce=nonce)), 201)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"nonce": "short"}, "$.nonce"),
        ({"nonce": "n" * 129}, "$.nonce"),
        ({"nonce": 1234567890123456}, "$.nonce"),
        ({"issued_at": "yesterday"}, "$.issued_at"),
        ({"agent": "not an id"}, "$.agent"),
        ({"extra": 1}, "$.extra"),
        ({"signature": 7}, "$.signature"),
    ],
)
def test_malformed_session_body_is_malformed(
    api: APIClient, world: World, change: dict, path: str
) -> None:
    """wire§5: the body's fields and the nonce of 16..128 characters."""
    body = {**world.w1.session_body(), **change}
    assert error_of(post(api, "/sessions", body), 400, "MALFORMED")["details"]["path"] == path


@pytest.mark.parametrize("raw", [b"[]", b"null", b"{", b'{"agent": "w1", "agent": "w1"}'])
def test_session_body_that_is_not_an_object_is_malformed(
    api: APIClient, world: World, raw: bytes
) -> None:
    """wire§1/§5: strict JSON, and an object."""
    error_of(post(api, "/sessions", raw), 400, "MALFORMED")


def test_current_session_for_an_agent_is_the_same_document_fresh(
    api: APIClient, world: World
) -> None:
    """wire§4: GET /sessions/current answers the session document for an agent's token."""
    body = json_of(get(api, "/sessions/current", world.w1.token), 200)
    assert set(body) == {"session_id", "session_epoch", "token", "expires_at", "memberships"}
    assert body["token"] == world.w1.token
    assert body["session_epoch"] == world.w1.session_epoch
    assert body["memberships"] == {world.group: {"roles": ["coordinator"], "epoch": 1}}


def test_current_session_for_a_human_is_principal_and_memberships(
    api: APIClient, world: World
) -> None:
    """wire§4: for a human's API token, {"principal", "memberships"}."""
    body = json_of(get(api, "/sessions/current", world.olga.token), 200)
    assert body == {
        "principal": "user:olga",
        "memberships": {world.group: {"roles": ["mission_owner"], "epoch": 1}},
    }


def test_current_session_needs_a_known_token(api: APIClient, world: World) -> None:
    """wire§4: a missing or unknown token is 401 UNAUTHENTICATED."""
    error_of(get(api, "/sessions/current"), 401, "UNAUTHENTICATED")
    error_of(get(api, "/sessions/current", "mws_unknown"), 401, "UNAUTHENTICATED")
