"""Every check of wire.md §3 over HTTP at ``POST /groups/{g}/commands``, and their order.

Each refusal is asserted with its status, code and requirement, and with the head sequence
unchanged: a refused command appends nothing (wire.md §6).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.models import Event
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.signing import generate_private_key
from tests.factories import AgentPersona, World, agent, grant, mission_body, now_text

from .http import API, JSON, bearer, error_of, get, head_sequence, json_of, post, submit

pytestmark = pytest.mark.django_db

#: an extension this authority does not support (the offline binding is supported: R11.5-07)
EXTENSION = "urn:example:extension:unsupported"
OFFLINE = "urn:missionweaveprotocol:extension:bounded-offline-execution"


def refused(
    api: APIClient,
    world: World,
    document: object,
    token: str | None,
    *,
    status: int,
    code: str,
    requirement: str,
    group: str | None = None,
) -> dict[str, Any]:
    """Submit, expect the refusal, and check that the log did not move."""
    before = head_sequence(world.group)
    response = submit(api, group or world.group, document, token)
    error = error_of(response, status, code)
    assert error["requirement"] == requirement, error
    assert head_sequence(world.group) == before
    return error


def create(
    world: World, persona: AgentPersona | None = None, body: Any = None, **overrides: Any
) -> dict[str, Any]:
    """A signed mission.create (w1's unless told), with envelope fields overridden."""
    persona = persona or world.w1
    body = mission_body() if body is None else body
    return persona.command(world.group, "mission.create", body, **overrides)


def outsider(world: World) -> AgentPersona:
    w3 = agent("w3", world.org)
    w3.open_session()
    return w3


# --- step 1: bearer token ----------------------------------------------------------------


def test_no_token_is_unauthenticated(api: APIClient, world: World) -> None:
    """wire§3 step 1: a missing token is 401 UNAUTHENTICATED."""
    error = refused(
        api, world, create(world), None, status=401, code="UNAUTHENTICATED", requirement="wire§4"
    )
    assert error["details"] == {}


@pytest.mark.parametrize(
    "header",
    ["Bearer mws_not-a-token", "Bearer mwt_not-a-token", "Bearer x", "Basic dzE6cHc=", "Bearer "],
)
def test_unknown_or_misshapen_token_is_unauthenticated(
    api: APIClient, world: World, header: str
) -> None:
    """wire§3 step 1 / §4: an unknown token (or no Bearer scheme) is 401 UNAUTHENTICATED."""
    before = head_sequence(world.group)
    response = api.post(
        f"{API}/groups/{world.group}/commands",
        data=json.dumps(create(world)).encode(),
        content_type=JSON,
        HTTP_AUTHORIZATION=header,
    )
    assert error_of(response, 401, "UNAUTHENTICATED")["requirement"] == "wire§4"
    assert head_sequence(world.group) == before


def test_no_token_is_refused_before_the_body_is_read(api: APIClient, world: World) -> None:
    """wire§3 step 1: the token is checked before the body (an invalid body is not reported)."""
    refused(
        api, world, b"{not json", None, status=401, code="UNAUTHENTICATED", requirement="wire§4"
    )


def test_replaced_session_token_is_stale_session(api: APIClient, world: World) -> None:
    """wire§3 step 1 / R11.3-10: a new session invalidates the previous token."""
    old_token = world.w1.token
    document = create(world)
    world.w1.open_session()
    refused(
        api, world, document, old_token, status=401, code="STALE_SESSION", requirement="R11.3-10"
    )


@pytest.mark.parametrize(
    "body", [b"{not json", b"[]", b'{"a": 1, "a": 2}', b" " * (2 * 1024 * 1024)]
)
def test_stale_session_is_refused_before_the_body_is_read(
    api: APIClient, world: World, body: bytes
) -> None:
    """wire§3 step 1: STALE_SESSION wins over a malformed, or oversized, body."""
    old_token = world.w1.token
    world.w1.open_session()
    refused(api, world, body, old_token, status=401, code="STALE_SESSION", requirement="R11.3-10")


# --- step 2: well-formed envelope, group, extensions, type --------------------------------


@pytest.mark.parametrize(
    ("raw", "requirement"),
    [
        (b"{not json", "wire§1"),
        (b'{"id": "a", "id": "b"}', "wire§1"),
        (b"[1e400]", "wire§1"),
        (b"[]", "wire§3"),
        (b"{}", "wire§3"),
        (b'"a command"', "wire§3"),
    ],
)
def test_unparseable_or_non_object_body_is_malformed(
    api: APIClient, world: World, raw: bytes, requirement: str
) -> None:
    """wire§1 / §3 step 2: strict JSON first, then an envelope object."""
    refused(api, world, raw, world.w1.token, status=400, code="MALFORMED", requirement=requirement)


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"id": "not an id"}, "$.id"),
        ({"membership_epoch": "1"}, "$.membership_epoch"),
        ({"membership_epoch": True}, "$.membership_epoch"),
        ({"session_epoch": "1"}, "$.session_epoch"),
        ({"issued_at": "2026-11-30T10:00:00+01:00"}, "$.issued_at"),
        ({"actor": "w1"}, "$.actor"),
        ({"body": []}, "$.body"),
        ({"colour": "red"}, "$.colour"),
    ],
)
def test_malformed_envelope_is_malformed_with_its_path(
    api: APIClient, world: World, overrides: dict[str, Any], path: str
) -> None:
    """wire§3 step 2: a malformed envelope is 400 MALFORMED naming the field."""
    error = refused(
        api,
        world,
        create(world, **overrides),
        world.w1.token,
        status=400,
        code="MALFORMED",
        requirement="wire§3",
    )
    assert error["details"]["path"] == path


def test_path_group_other_than_the_envelope_group_is_malformed(
    api: APIClient, world: World
) -> None:
    """wire§3 step 2: the path's group equals the envelope's ``group``."""
    document = world.w1.command("g-elsewhere", "mission.create", mission_body())
    error = refused(
        api, world, document, world.w1.token, status=400, code="MALFORMED", requirement="wire§3"
    )
    assert error["details"]["path"] == "$.group"


def test_unsupported_extension_is_refused(api: APIClient, world: World) -> None:
    """wire§3 step 2 / R11.5-07: an extension the authority does not support."""
    error = refused(
        api,
        world,
        create(world, extensions={EXTENSION: {}}),
        world.w1.token,
        status=400,
        code="UNSUPPORTED_EXTENSION",
        requirement="wire§3",
    )
    assert error["details"] == {"extension": EXTENSION}


def test_the_offline_binding_on_a_command_that_cannot_be_buffered_is_malformed(
    api: APIClient, world: World
) -> None:
    """R11.5-04, R11.5-07: the offline extension is supported (past step 2), but only
    progress, checkpoints and messages may carry it."""
    error = refused(
        api,
        world,
        create(world, extensions={OFFLINE: {}}),
        world.w1.token,
        status=400,
        code="MALFORMED",
        requirement="R11.5-04",
    )
    assert error["details"]["path"] == f'$.extensions["{OFFLINE}"]'


@pytest.mark.parametrize("type_", ["mission.explode", "membership.grant", "membership.revoke"])
def test_unknown_type_is_unknown_command(api: APIClient, world: World, type_: str) -> None:
    """wire§3 step 2: unknown types (staff-only types too) are 400 UNKNOWN_COMMAND."""
    document = world.w1.command(world.group, type_, {"principal": "agent:w1", "roles": ["admin"]})
    error = refused(
        api,
        world,
        document,
        world.w1.token,
        status=400,
        code="UNKNOWN_COMMAND",
        requirement="wire§9",
    )
    assert error["details"] == {"type": type_}


# --- step 3: token ↔ actor, signature ----------------------------------------------------


def test_token_of_another_agent_is_forbidden(api: APIClient, world: World) -> None:
    """wire§3 step 3: w2's session token cannot carry w1's command."""
    refused(
        api,
        world,
        create(world),
        world.w2.token,
        status=403,
        code="FORBIDDEN",
        requirement="wire§3",
    )


def test_human_token_for_an_agent_command_is_forbidden(api: APIClient, world: World) -> None:
    """wire§3 step 3: an API token is the human's, never an agent's."""
    refused(
        api,
        world,
        create(world),
        world.olga.token,
        status=403,
        code="FORBIDDEN",
        requirement="wire§3",
    )


def test_agent_token_for_a_human_command_is_forbidden(api: APIClient, world: World) -> None:
    """wire§3 step 3: an agent cannot submit as a human."""
    document = world.olga.command(world.group, "mission.create", mission_body())
    refused(
        api, world, document, world.w1.token, status=403, code="FORBIDDEN", requirement="wire§3"
    )


def test_signature_by_another_key_is_invalid(api: APIClient, world: World) -> None:
    """wire§3 step 3: the signature must verify under a current key of the actor."""
    document = signed_envelope(generate_private_key(), create(world))
    refused(
        api,
        world,
        document,
        world.w1.token,
        status=401,
        code="INVALID_SIGNATURE",
        requirement="wire§3",
    )


def test_body_changed_after_signing_is_invalid_signature(api: APIClient, world: World) -> None:
    """wire§3 step 3: the signature covers the body."""
    document = create(world)
    document["body"]["goal"] = "something else"
    refused(
        api,
        world,
        document,
        world.w1.token,
        status=401,
        code="INVALID_SIGNATURE",
        requirement="wire§3",
    )


# --- step 4: clock skew ------------------------------------------------------------------


@pytest.mark.parametrize("offset", [301, -301])
def test_issued_at_301_seconds_off_is_clock_skew(api: APIClient, world: World, offset: int) -> None:
    """wire§3 step 4: issued_at within ±300 s of the authority clock."""
    error = refused(
        api,
        world,
        create(world, issued_at=now_text(offset)),
        world.w1.token,
        status=401,
        code="CLOCK_SKEW",
        requirement="wire§3",
    )
    assert error["details"]["authority_time"].endswith("Z")


@pytest.mark.parametrize("offset", [295, -295])
def test_issued_at_within_the_window_is_accepted(api: APIClient, world: World, offset: int) -> None:
    """wire§3 step 4: a few seconds short of the limit is fine either way."""
    response = submit(api, world.group, create(world, issued_at=now_text(offset)), world.w1.token)
    assert response.status_code == 201


# --- step 5: idempotency -----------------------------------------------------------------


def test_same_id_same_content_replays_the_stored_response(api: APIClient, world: World) -> None:
    """wire§3 step 5: same status and body, ``Idempotent-Replayed: true``, one event only."""
    document = create(world)
    before = head_sequence(world.group)
    first = submit(api, world.group, document, world.w1.token)
    body = json_of(first, 201)
    assert "Idempotent-Replayed" not in first
    second = submit(api, world.group, document, world.w1.token)
    assert json_of(second, 201) == body
    assert second["Idempotent-Replayed"] == "true"
    assert head_sequence(world.group) == before + 1
    assert Event.objects.filter(group_id=world.group, command_id=document["id"]).count() == 1


def test_retry_resigned_later_with_new_epochs_is_the_same_content(
    api: APIClient, world: World
) -> None:
    """wire§3 step 5: content excludes signature, issued_at and both epochs (R11.5-09)."""
    document = create(world)
    body = json_of(submit(api, world.group, document, world.w1.token), 201)
    world.w1.open_session()  # reconnect: new token, new session epoch
    retry = create(world, id=document["id"], body=document["body"], issued_at=now_text(-5))
    assert retry["session_epoch"] != document["session_epoch"]
    before = head_sequence(world.group)
    replay = submit(api, world.group, retry, world.w1.token)
    assert json_of(replay, 201) == body
    assert replay["Idempotent-Replayed"] == "true"
    assert head_sequence(world.group) == before


def test_same_id_other_content_is_duplicate_command_id(api: APIClient, world: World) -> None:
    """wire§3 step 5: a command id is bound to its content."""
    document = create(world)
    json_of(submit(api, world.group, document, world.w1.token), 201)
    other = create(world, id=document["id"])  # same id, a new mission body
    error = refused(
        api,
        world,
        other,
        world.w1.token,
        status=409,
        code="DUPLICATE_COMMAND_ID",
        requirement="wire§3",
    )
    assert error["details"] == {"command_id": document["id"]}


def test_same_id_from_another_actor_is_its_own_command(api: APIClient, world: World) -> None:
    """wire§3 step 5: idempotency is per (group, actor, id)."""
    mine = create(world, id="cmd-shared")
    json_of(submit(api, world.group, mine, world.w1.token), 201)
    hers = world.olga.command(world.group, "mission.create", mission_body(), id="cmd-shared")
    response = submit(api, world.group, hers, world.olga.token)
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response


# --- step 6: session epoch ---------------------------------------------------------------


@pytest.mark.parametrize("delta", [-1, 1])
def test_wrong_session_epoch_in_the_envelope_is_stale_session(
    api: APIClient, world: World, delta: int
) -> None:
    """wire§3 step 6 / R11.3-10: session_epoch equals the agent's current one."""
    document = create(world, session_epoch=world.w1.session_epoch + delta)
    error = refused(
        api,
        world,
        document,
        world.w1.token,
        status=401,
        code="STALE_SESSION",
        requirement="R11.3-10",
    )
    assert error["details"] == {"current_epoch": world.w1.session_epoch}


# --- steps 7, 8: membership, role, membership epoch --------------------------------------


def test_non_member_is_not_a_member(api: APIClient, world: World) -> None:
    """wire§3 step 7: an agent of the organisation without membership in the group."""
    w3 = outsider(world)
    refused(
        api,
        world,
        create(world, w3),
        w3.token,
        status=403,
        code="NOT_A_MEMBER",
        requirement="wire§2",
    )


def test_revoked_member_is_not_a_member(api: APIClient, world: World) -> None:
    """wire§3 step 7: a revoked membership no longer admits commands."""
    response = api.delete(
        f"{API}/groups/{world.group}/memberships/agent:w1", **bearer(world.alice.token)
    )
    epoch = json_of(response, 200)["epoch"]
    refused(
        api,
        world,
        create(world, membership_epoch=epoch),
        world.w1.token,
        status=403,
        code="NOT_A_MEMBER",
        requirement="wire§2",
    )


def test_worker_issuing_mission_create_is_forbidden(api: APIClient, world: World) -> None:
    """wire§3 step 7 / §9: mission.create is for mission_owner or coordinator."""
    error = refused(
        api,
        world,
        create(world, world.w2),
        world.w2.token,
        status=403,
        code="FORBIDDEN",
        requirement="wire§9",
    )
    assert set(error["details"]["allowed_roles"]) == {"mission_owner", "coordinator"}


def test_stale_membership_epoch_is_refused(api: APIClient, world: World) -> None:
    """wire§3 step 8: after a role change the old membership epoch is stale."""
    stale = world.w1.membership_epochs[world.group]
    current = grant(world.alice, world.group, world.w1, "coordinator", "reviewer")
    assert current == stale + 1
    error = refused(
        api,
        world,
        create(world, membership_epoch=stale),
        world.w1.token,
        status=403,
        code="STALE_MEMBERSHIP",
        requirement="wire§2",
    )
    assert error["details"] == {"current_epoch": current}
    response = submit(api, world.group, create(world, membership_epoch=current), world.w1.token)
    assert response.status_code == 201


# --- step 9: the body --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path", "requirement"),
    [
        ({"goal": "g", "budgets": {}}, "$.mission", "wire§9"),
        ({"mission": "m-x", "goal": "", "budgets": {}}, "$.goal", "wire§9"),
        ({"mission": "m-x", "goal": "g", "budgets": {"money": -1}}, "$.budgets.money", "R10.1-01"),
        ({"mission": "m-x", "goal": "g", "budgets": {}, "extra": 1}, "$.extra", "wire§9"),
    ],
)
def test_bad_body_is_malformed_with_its_path(
    api: APIClient, world: World, body: dict[str, Any], path: str, requirement: str
) -> None:
    """wire§3 step 9: the body's shape is 400 MALFORMED naming the field."""
    document = world.w1.command(world.group, "mission.create", body)
    error = refused(
        api,
        world,
        document,
        world.w1.token,
        status=400,
        code="MALFORMED",
        requirement=requirement,
    )
    assert error["details"]["path"] == path


# --- accepted commands -------------------------------------------------------------------


def test_agent_command_is_accepted_and_appended(api: APIClient, world: World) -> None:
    """wire§4: 201 {command_id, events: [{event_id, sequence, type}], result}."""
    before = head_sequence(world.group)
    document = create(world)
    body = json_of(submit(api, world.group, document, world.w1.token), 201)
    assert set(body) == {"command_id", "events", "result"}
    assert body["command_id"] == document["id"]
    [event] = body["events"]
    assert set(event) == {"event_id", "sequence", "type"}
    assert (event["sequence"], event["type"]) == (before + 1, "mission.created")
    assert body["result"] == {"mission": document["body"]["mission"]}
    assert head_sequence(world.group) == before + 1


def test_human_command_with_api_token_is_recorded_as_user(api: APIClient, world: World) -> None:
    """wire§2/§3: olga (mission_owner) issues mission.create with her API token."""
    document = world.olga.command(world.group, "mission.create", mission_body())
    body = json_of(submit(api, world.group, document, world.olga.token), 201)
    page = json_of(get(api, f"/groups/{world.group}/events", world.olga.token), 200)
    [event] = [e for e in page["events"] if e["event_id"] == body["events"][0]["event_id"]]
    assert event["actor"] == "user:olga"
    assert event["command_id"] == document["id"]
    assert event["payload"]["mission"] == document["body"]["mission"]


# --- order of the checks -----------------------------------------------------------------


def test_order_malformed_before_token_actor_mismatch(api: APIClient, world: World) -> None:
    """wire§3: step 2 (group) before step 3 (token ↔ actor)."""
    document = world.w1.command("g-elsewhere", "mission.create", mission_body())
    refused(
        api, world, document, world.w2.token, status=400, code="MALFORMED", requirement="wire§3"
    )


def test_order_unknown_command_before_token_actor_mismatch(api: APIClient, world: World) -> None:
    """wire§3: step 2 (type) before step 3 (token ↔ actor)."""
    document = world.w1.command(world.group, "mission.explode", {})
    refused(
        api,
        world,
        document,
        world.w2.token,
        status=400,
        code="UNKNOWN_COMMAND",
        requirement="wire§9",
    )


def test_order_actor_mismatch_before_signature(api: APIClient, world: World) -> None:
    """wire§3 step 3: the token ↔ actor check, then the signature."""
    document = signed_envelope(generate_private_key(), create(world))
    refused(
        api, world, document, world.w2.token, status=403, code="FORBIDDEN", requirement="wire§3"
    )


def test_order_signature_before_clock_skew(api: APIClient, world: World) -> None:
    """wire§3: step 3 (signature) before step 4 (clock)."""
    document = signed_envelope(generate_private_key(), create(world, issued_at=now_text(-900)))
    refused(
        api,
        world,
        document,
        world.w1.token,
        status=401,
        code="INVALID_SIGNATURE",
        requirement="wire§3",
    )


def test_order_clock_skew_before_duplicate_id(api: APIClient, world: World) -> None:
    """wire§3: step 4 (clock) before step 5 (idempotency)."""
    document = create(world)
    json_of(submit(api, world.group, document, world.w1.token), 201)
    late = create(world, id=document["id"], issued_at=now_text(900))
    refused(api, world, late, world.w1.token, status=401, code="CLOCK_SKEW", requirement="wire§3")


def test_order_duplicate_id_before_stale_session_epoch(api: APIClient, world: World) -> None:
    """wire§3: step 5 (idempotency) before step 6 (session epoch)."""
    document = create(world)
    json_of(submit(api, world.group, document, world.w1.token), 201)
    other = create(world, id=document["id"], session_epoch=world.w1.session_epoch + 7)
    refused(
        api,
        world,
        other,
        world.w1.token,
        status=409,
        code="DUPLICATE_COMMAND_ID",
        requirement="wire§3",
    )


def test_order_replay_before_stale_epochs_and_lost_membership(api: APIClient, world: World) -> None:
    """wire§3: a stored response is replayed before steps 6–8 are looked at."""
    document = create(world)
    body = json_of(submit(api, world.group, document, world.w1.token), 201)
    api.delete(f"{API}/groups/{world.group}/memberships/agent:w1", **bearer(world.alice.token))
    retry = create(world, id=document["id"], body=document["body"], membership_epoch=99)
    response = submit(api, world.group, retry, world.w1.token)
    assert json_of(response, 201) == body
    assert response["Idempotent-Replayed"] == "true"


def test_order_stale_session_epoch_before_membership(api: APIClient, world: World) -> None:
    """wire§3: step 6 (session epoch) before step 7 (membership)."""
    w3 = outsider(world)
    document = create(world, w3, session_epoch=w3.session_epoch + 1)
    refused(
        api, world, document, w3.token, status=401, code="STALE_SESSION", requirement="R11.3-10"
    )


def test_order_role_before_membership_epoch(api: APIClient, world: World) -> None:
    """wire§3: step 7 (role) before step 8 (membership epoch)."""
    document = create(world, world.w2, membership_epoch=42)
    refused(
        api, world, document, world.w2.token, status=403, code="FORBIDDEN", requirement="wire§9"
    )


def test_order_membership_epoch_before_body(api: APIClient, world: World) -> None:
    """wire§3: step 8 (membership epoch) before step 9 (body)."""
    document = world.w1.command(world.group, "mission.create", {"bad": True}, membership_epoch=42)
    refused(
        api,
        world,
        document,
        world.w1.token,
        status=403,
        code="STALE_MEMBERSHIP",
        requirement="wire§2",
    )


def test_token_is_checked_before_the_content_type(api: APIClient, world: World) -> None:
    """wire§3 step 1: "before the body is read" — a missing token wins over a 415."""
    response = post(api, f"/groups/{world.group}/commands", b"x", None, content_type="text/plain")
    error_of(response, 401, "UNAUTHENTICATED")
