"""Admin endpoints (wire.md §4): organisations, agents, groups, memberships, and who may call."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.models import GroupLog
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.signing import b64url_encode, generate_private_key, public_key_text
from tests.factories import World, agent_card, human

from .http import API, bearer, error_of, get, head_sequence, json_of, post

pytestmark = pytest.mark.django_db


def membership_path(group: str, principal: str | None = None) -> str:
    return f"/groups/{group}/memberships" + (f"/{principal}" if principal else "")


def revoke(api: APIClient, token: str | None, group: str, principal: str) -> Any:
    return api.delete(API + membership_path(group, principal), **bearer(token))


def agent_body(ident: str, org: str) -> dict[str, Any]:
    key = public_key_text(generate_private_key().public_key())
    return {"id": ident, "organization": org, "public_key": key, "agent_card": agent_card()}


def test_organization_is_created_once(api: APIClient, world: World) -> None:
    """wire§4: POST /organizations → 201 the organisation; the same body again is 200."""
    body = {"id": "org-beta", "name": "Beta"}
    assert json_of(post(api, "/organizations", body, world.alice.token), 201) == body
    assert json_of(post(api, "/organizations", body, world.alice.token), 200) == body
    other = post(api, "/organizations", {"id": "org-beta", "name": "Gamma"}, world.alice.token)
    error_of(other, 409, "ALREADY_EXISTS")


def test_agent_is_registered(api: APIClient, world: World) -> None:
    """wire§4: POST /agents {id, organization, public_key, agent_card} → 201 the agent."""
    body = agent_body("w9", world.org)
    created = json_of(post(api, "/agents", body, world.alice.token), 201)
    assert created == {
        "id": "w9",
        "organization": world.org,
        "public_keys": [body["public_key"]],
        "agent_card": body["agent_card"],
        "session_epoch": 0,
    }
    assert json_of(post(api, "/agents", body, world.alice.token), 200) == created


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"organization": "org-missing"}, 404, "NOT_FOUND"),
        ({"public_key": "AAAA"}, 400, "MALFORMED"),
        ({"public_key": "A" * 43 + "="}, 400, "MALFORMED"),
        ({"public_key": b64url_encode(bytes([1]) + bytes(31))}, 400, "MALFORMED"),  # identity
        ({"agent_card": {"name": "x"}}, 400, "MALFORMED"),
        ({"id": "bad id"}, 400, "MALFORMED"),
    ],
)
def test_bad_agent_registration_is_refused(
    api: APIClient, world: World, change: dict, status: int, code: str
) -> None:
    """wire§4/§1: an unknown organisation is 404; a bad key or card is 400 — a key of
    small order too (wire§1, clarified 2026-12-04)."""
    body = {**agent_body("w9", world.org), **change}
    error_of(post(api, "/agents", body, world.alice.token), status, code)


def test_group_is_created_with_an_empty_log(api: APIClient, world: World) -> None:
    """wire§4: POST /groups → 201 the group (its log starts empty)."""
    body = {"id": "g-new", "organization": world.org, "name": "New"}
    assert json_of(post(api, "/groups", body, world.alice.token), 201) == body
    log = GroupLog.objects.get(group_id="g-new")
    assert (log.head_sequence, log.head_hash) == (0, ZERO_HASH)
    assert json_of(post(api, "/groups", body, world.alice.token), 200) == body
    missing = {"id": "g-x", "organization": "org-missing", "name": "X"}
    error_of(post(api, "/groups", missing, world.alice.token), 404, "NOT_FOUND")


def test_membership_epochs_over_rest(api: APIClient, world: World) -> None:
    """wire§2/§4: 1 on grant (201), +1 on change (200), revoke → 200 with epoch, re-grant
    continues (201)."""
    token, group, principal = world.alice.token, world.group, "agent:w9"
    json_of(post(api, "/agents", agent_body("w9", world.org), token), 201)
    grant = {"principal": principal, "roles": ["worker"]}
    assert json_of(post(api, membership_path(group), grant, token), 201) == {
        "principal": principal,
        "roles": ["worker"],
        "epoch": 1,
    }
    change = {"principal": principal, "roles": ["worker", "reviewer"]}
    assert json_of(post(api, membership_path(group), change, token), 200) == {
        "principal": principal,
        "roles": ["reviewer", "worker"],
        "epoch": 2,
    }
    assert json_of(revoke(api, token, group, principal), 200) == {
        "principal": principal,
        "epoch": 3,
    }
    error_of(revoke(api, token, group, principal), 404, "NOT_FOUND")
    assert json_of(post(api, membership_path(group), grant, token), 201)["epoch"] == 4


def test_membership_events_are_recorded_with_the_admin_as_actor(
    api: APIClient, world: World
) -> None:
    """wire§4/§6: membership.granted/changed/revoked in the group's log, actor user:<admin>."""
    human("zoe")  # roles go only to someone who exists (issue 13 §1)
    before = head_sequence(world.group)
    token = world.alice.token
    post(api, membership_path(world.group), {"principal": "user:zoe", "roles": ["observer"]}, token)
    post(api, membership_path(world.group), {"principal": "user:zoe", "roles": ["worker"]}, token)
    revoke(api, token, world.group, "user:zoe")
    page = json_of(get(api, f"/groups/{world.group}/events?after={before}", world.olga.token), 200)
    zoe = "user:zoe"
    assert [(e["type"], e["actor"], e["payload"]) for e in page["events"]] == [
        ("membership.granted", "user:alice", {"principal": zoe, "roles": ["observer"], "epoch": 1}),
        ("membership.changed", "user:alice", {"principal": zoe, "roles": ["worker"], "epoch": 2}),
        ("membership.revoked", "user:alice", {"principal": zoe, "epoch": 3}),
    ]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"principal": "zoe", "roles": ["worker"]}, "$.principal"),
        ({"principal": "user:zoe", "roles": ["boss"]}, "$.roles[0]"),
        ({"principal": "user:zoe", "roles": []}, "$.roles"),
        ({"principal": "user:zoe"}, "$.roles"),
    ],
)
def test_bad_membership_body_is_malformed(
    api: APIClient, world: World, body: dict, path: str
) -> None:
    """wire§2: principals are agent:/user:, roles are the six of wire.md §2."""
    before = head_sequence(world.group)
    response = post(api, membership_path(world.group), body, world.alice.token)
    assert error_of(response, 400, "MALFORMED")["details"]["path"] == path
    assert head_sequence(world.group) == before


def test_membership_in_an_unknown_group_is_not_found(api: APIClient, world: World) -> None:
    """wire§4: an unknown group is 404."""
    body = {"principal": "user:zoe", "roles": ["worker"]}
    error_of(post(api, membership_path("g-missing"), body, world.alice.token), 404, "NOT_FOUND")
    error_of(revoke(api, world.alice.token, "g-missing", "user:zoe"), 404, "NOT_FOUND")


def _admin_calls(world: World) -> list[tuple[str, str, Any]]:
    return [
        ("post", "/organizations", {"id": "org-z", "name": "Z"}),
        ("post", "/agents", agent_body("w-z", world.org)),
        ("post", "/groups", {"id": "g-z", "organization": world.org, "name": "Z"}),
        ("post", membership_path(world.group), {"principal": "user:zoe", "roles": ["worker"]}),
        ("delete", membership_path(world.group, "agent:w2"), None),
    ]


@pytest.mark.parametrize("call", range(5))
@pytest.mark.parametrize(
    ("who", "status", "code"),
    [
        ("agent", 403, "FORBIDDEN"),
        ("human", 403, "FORBIDDEN"),
        ("none", 401, "UNAUTHENTICATED"),
        ("unknown", 401, "UNAUTHENTICATED"),
    ],
)
def test_admin_endpoints_need_a_staff_api_token(
    api: APIClient, world: World, call: int, who: str, status: int, code: str
) -> None:
    """wire§4: any token but a staff user's API token is 403 FORBIDDEN; none is 401."""
    token = {
        "agent": world.w1.token,
        "human": world.olga.token,
        "none": None,
        "unknown": "mwt_unknown",
    }[who]
    method, path, body = _admin_calls(world)[call]
    before = head_sequence(world.group)
    if method == "post":
        response = post(api, path, body, token)
    else:
        response = api.delete(API + path, **bearer(token))
    error = error_of(response, status, code)
    if code == "FORBIDDEN":
        assert error["requirement"] == "wire§4"
    assert head_sequence(world.group) == before


def test_a_second_staff_user_is_an_admin_too(api: APIClient, world: World) -> None:
    """wire§4: `api_token <user> --staff` tokens are admin tokens; the actor is that admin."""
    bob = human("bob", staff=True)
    human("zoe")
    body = {"principal": "user:zoe", "roles": ["observer"]}
    json_of(post(api, membership_path(world.group), body, bob.token), 201)
    last = json_of(get(api, f"/groups/{world.group}/events", world.olga.token), 200)["events"][-1]
    assert (last["type"], last["actor"]) == ("membership.granted", "user:bob")
