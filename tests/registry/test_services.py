"""Registry services: organisations, agents and their cards, groups, memberships, API tokens
(wire.md §2, §4)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.registry import services
from apps.registry.models import Agent, AgentCard, AgentKey, ApiToken, Group, Membership
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.signing import generate_private_key, public_key_text
from tests import factories
from tests.factories import World, agent_card


def _refusal(call: Callable[..., object], *args: Any, **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as refused:
        call(*args, **kwargs)
    return refused.value


def _key() -> str:
    return public_key_text(generate_private_key().public_key())


def _agent_body(**change: Any) -> dict[str, Any]:
    return {
        "id": "w9",
        "organization": "org-acme",
        "public_key": _key(),
        "agent_card": agent_card("w9"),
        **change,
    }


@pytest.fixture
def org(db) -> str:
    return factories.organization()


# --- organisations -----------------------------------------------------------------------


def test_creating_an_organization_twice_with_the_same_body_is_a_no_op(org: str) -> None:
    """wire§4: the same body again changes nothing; other content is ALREADY_EXISTS."""
    again, created = services.organization_create(body={"id": org, "name": org.title()})
    assert not created
    assert again.name == "Org-Acme"
    refusal = _refusal(services.organization_create, body={"id": org, "name": "Other"})
    assert refusal.code is ErrorCode.ALREADY_EXISTS


# --- agents ------------------------------------------------------------------------------


def test_registering_an_agent_stores_its_key_and_card(org: str) -> None:
    """wire§4 POST /agents, R11.1-11: the agent, one current key, one card version."""
    body = _agent_body()
    agent, created = services.agent_register(body=body)
    assert created
    assert agent.as_wire() == {
        "id": "w9",
        "organization": org,
        "public_keys": [body["public_key"]],
        "agent_card": body["agent_card"],
        "session_epoch": 0,
    }


@pytest.mark.parametrize(
    "key",
    [
        "not base64url!",
        "AAAA",  # too short
        "A" * 44,  # 33 bytes
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",  # padded
        42,
        None,
    ],
)
def test_a_bad_public_key_is_malformed(org: str, key: object) -> None:
    """wire§1: a key is 32 raw bytes in base64url without padding; path names the field."""
    refusal = _refusal(services.agent_register, body=_agent_body(public_key=key))
    assert (refusal.code, refusal.details["path"]) == (ErrorCode.MALFORMED, "$.public_key")
    assert not Agent.objects.filter(pk="w9").exists()


@pytest.mark.parametrize(
    ("card", "path"),
    [
        ("a card", "$.agent_card"),
        ({**agent_card(), "name": ""}, "$.agent_card.name"),
        ({**agent_card(), "version": 1}, "$.agent_card.version"),
        ({k: v for k, v in agent_card().items() if k != "version"}, "$.agent_card.version"),
        ({**agent_card(), "colour": "red"}, "$.agent_card.colour"),
        ({**agent_card(), "capabilities": {"id": "x"}}, "$.agent_card.capabilities"),
        ({**agent_card(), "capabilities": ["x"]}, "$.agent_card.capabilities[0]"),
        ({**agent_card(), "capabilities": [{"id": "x"}]}, "$.agent_card.capabilities[0].version"),
        (
            {
                **agent_card(),
                "capabilities": [{"id": "a", "version": "1"}, {"id": "", "version": "1"}],
            },
            "$.agent_card.capabilities[1].id",
        ),
        ({**agent_card(), "max_concurrency": 0}, "$.agent_card.max_concurrency"),
        ({**agent_card(), "max_concurrency": True}, "$.agent_card.max_concurrency"),
        ({**agent_card(), "max_concurrency": 1.5}, "$.agent_card.max_concurrency"),
    ],
)
def test_a_bad_agent_card_is_malformed_with_its_path(org: str, card: object, path: str) -> None:
    """R11.1-11, wire§8: the details name the bad field of the card by JSON path."""
    refusal = _refusal(services.agent_register, body=_agent_body(agent_card=card))
    assert (refusal.code, refusal.details["path"]) == (ErrorCode.MALFORMED, path)
    assert not Agent.objects.filter(pk="w9").exists()


@pytest.mark.parametrize(
    ("change", "code", "path"),
    [
        ({"id": "bad id"}, ErrorCode.MALFORMED, "$.id"),
        ({"organization": "org-nowhere"}, ErrorCode.NOT_FOUND, "$.organization"),
    ],
)
def test_a_bad_agent_id_or_unknown_organization_is_refused(
    org: str, change: dict[str, Any], code: ErrorCode, path: str
) -> None:
    """wire§1, wire§4: ids follow the id syntax; the organisation must exist."""
    refusal = _refusal(services.agent_register, body=_agent_body(**change))
    assert (refusal.code, refusal.details["path"]) == (code, path)


def test_a_new_card_version_is_kept_beside_the_old_one(org: str) -> None:
    """R11.1-11: card versions are kept; the newest is current; a second key is added."""
    first = _agent_body()
    services.agent_register(body=first)
    second = _agent_body(agent_card={**agent_card("w9", version="2"), "max_concurrency": 5})

    agent, created = services.agent_register(body=second)

    assert not created
    assert list(
        AgentCard.objects.filter(agent=agent).order_by("pk").values_list("version", "card")
    ) == [
        ("1", first["agent_card"]),
        ("2", second["agent_card"]),
    ]
    assert agent.current_card().version == "2"
    assert set(AgentKey.objects.filter(agent=agent).values_list("public_key", flat=True)) == {
        first["public_key"],
        second["public_key"],
    }


def test_the_same_card_version_with_other_content_is_already_exists(org: str) -> None:
    """R11.1-11: a version is immutable once recorded; the same content again is a no-op."""
    body = _agent_body()
    services.agent_register(body=body)
    services.agent_register(body=body)
    changed = {**body, "agent_card": {**body["agent_card"], "max_concurrency": 9}}

    refusal = _refusal(services.agent_register, body=changed)

    assert refusal.code is ErrorCode.ALREADY_EXISTS
    (card,) = AgentCard.objects.filter(agent_id="w9")
    assert card.card == body["agent_card"]


def test_an_agent_id_of_another_organization_is_already_exists(org: str) -> None:
    """wire§4: an agent belongs to one organisation."""
    services.agent_register(body=_agent_body())
    factories.organization("org-other")
    refusal = _refusal(services.agent_register, body=_agent_body(organization="org-other"))
    assert refusal.code is ErrorCode.ALREADY_EXISTS
    assert Agent.objects.get(pk="w9").organization_id == org


# --- groups ------------------------------------------------------------------------------


def test_creating_a_group_creates_its_empty_log_head(org: str) -> None:
    """wire§4 POST /groups, wire§6: the log starts empty, head at 0 and the zero hash."""
    group, created = services.group_create(body={"id": "g-new", "organization": org, "name": "New"})
    assert created
    assert group.as_wire() == {"id": "g-new", "organization": org, "name": "New"}
    head = GroupLog.objects.get(group_id="g-new")
    assert (head.head_sequence, head.head_hash) == (0, ZERO_HASH)
    assert not Event.objects.filter(group_id="g-new").exists()


def test_creating_a_group_again_is_a_no_op_and_other_content_is_refused(org: str) -> None:
    """wire§4: same body → the existing group; other name → ALREADY_EXISTS; unknown org →
    NOT_FOUND; bad id → MALFORMED."""
    body = {"id": "g-new", "organization": org, "name": "New"}
    services.group_create(body=body)
    assert services.group_create(body=body)[1] is False
    assert GroupLog.objects.filter(group_id="g-new").count() == 1
    assert _refusal(services.group_create, body={**body, "name": "Renamed"}).code is (
        ErrorCode.ALREADY_EXISTS
    )
    assert _refusal(services.group_create, body={**body, "organization": "nope"}).code is (
        ErrorCode.NOT_FOUND
    )
    refusal = _refusal(services.group_create, body={**body, "id": "g new"})
    assert (refusal.code, refusal.details["path"]) == (ErrorCode.MALFORMED, "$.id")
    assert Group.objects.count() == 1


# --- memberships -------------------------------------------------------------------------


def test_membership_changes_are_events_by_the_admin_with_rising_epochs(world: World) -> None:
    """wire§2, wire§4, wire§6: grant (201, epoch 1), change (200, +1), revoke (+1), grant
    again (201, +1) — each an event whose actor is the admin."""
    admin = world.alice.caller
    principal = factories.agent("w9", world.org).principal
    outcomes = [
        services.membership_grant(
            group_id=world.group, admin=admin, body={"principal": principal, "roles": ["worker"]}
        ),
        services.membership_grant(
            group_id=world.group,
            admin=admin,
            body={"principal": principal, "roles": ["worker", "reviewer"]},
        ),
        services.membership_revoke(group_id=world.group, admin=admin, principal=principal),
        services.membership_grant(
            group_id=world.group, admin=admin, body={"principal": principal, "roles": ["observer"]}
        ),
    ]

    assert [(o.status, o.body["result"]["epoch"]) for o in outcomes] == [
        (201, 1),
        (200, 2),
        (200, 3),
        (201, 4),
    ]
    assert outcomes[1].body["result"]["roles"] == ["reviewer", "worker"]
    events = [
        json.loads(document)
        for document in Event.objects.filter(group_id=world.group, sequence__gt=3)
        .order_by("sequence")
        .values_list("document", flat=True)
    ]
    assert [(e["type"], e["actor"], e["payload"]["epoch"]) for e in events] == [
        ("membership.granted", "user:alice", 1),
        ("membership.changed", "user:alice", 2),
        ("membership.revoked", "user:alice", 3),
        ("membership.granted", "user:alice", 4),
    ]
    row = Membership.objects.get(group_id=world.group, principal=principal)
    assert (row.roles, row.epoch, row.active) == (["observer"], 4, True)
    assert services.memberships_of(principal) == {world.group: {"roles": ["observer"], "epoch": 4}}


def test_revoked_members_are_not_listed_and_revoking_twice_is_not_found(world: World) -> None:
    """wire§4 DELETE membership: a revoked member is no member; a second revoke is NOT_FOUND."""
    services.membership_revoke(group_id=world.group, admin=world.alice.caller, principal="agent:w2")
    assert services.membership_of(world.group, "agent:w2") is None
    assert services.memberships_of("agent:w2") == {}
    refusal = _refusal(
        services.membership_revoke,
        group_id=world.group,
        admin=world.alice.caller,
        principal="agent:w2",
    )
    assert refusal.code is ErrorCode.NOT_FOUND


def test_only_staff_may_change_memberships(world: World) -> None:
    """wire§4: a non-staff caller is FORBIDDEN, and nothing is appended or recorded."""
    head = GroupLog.objects.get(group_id=world.group).head_sequence
    refusal = _refusal(
        services.membership_grant,
        group_id=world.group,
        admin=world.olga.caller,
        body={"principal": "user:olga", "roles": ["admin"]},
    )
    assert refusal.code is ErrorCode.FORBIDDEN
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head
    assert CommandRecord.objects.filter(actor="user:olga").count() == 0


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"principal": "w9", "roles": ["worker"]}, "$.principal"),
        ({"principal": "agent:w9", "roles": []}, "$.roles"),
        ({"principal": "agent:w9", "roles": ["boss"]}, "$.roles[0]"),
        ({"principal": "agent:w9", "roles": ["worker", "worker"]}, "$.roles"),
        ({"principal": "agent:w9"}, "$.roles"),
    ],
)
def test_malformed_grants_name_the_field(world: World, body: dict[str, Any], path: str) -> None:
    """wire§2, wire§8: roles are known, listed once, non-empty; principals are typed."""
    refusal = _refusal(
        services.membership_grant, group_id=world.group, admin=world.alice.caller, body=body
    )
    assert (refusal.code, refusal.details["path"]) == (ErrorCode.MALFORMED, path)
    assert not Membership.objects.filter(principal="agent:w9").exists()


# --- API tokens --------------------------------------------------------------------------


def _token(*args: str) -> str:
    out = io.StringIO()
    call_command("api_token", *args, stdout=out)
    return out.getvalue().strip()


def test_api_token_command_prints_a_token_that_authenticates(db) -> None:
    """wire§4: ``manage.py api_token <user>`` creates the user and prints a working token."""
    token = _token("bob")

    caller = services.authenticate_bearer(token).caller

    assert (caller.principal, caller.kind, caller.is_staff) == ("user:bob", "user", False)
    assert not get_user_model().objects.get(username="bob").is_staff
    assert len(token) > 40
    assert not ApiToken.objects.filter(token_hash=token).exists()  # only its digest is stored


def test_api_token_command_honours_the_staff_flag(db) -> None:
    """wire§4: ``--staff`` makes the user staff, so the token reaches the admin API; a later
    plain token for the same user leaves it staff and both tokens work."""
    staff_token = _token("carol", "--staff")
    assert services.authenticate_bearer(staff_token).caller.is_staff
    plain_token = _token("carol")
    assert services.authenticate_bearer(plain_token).caller.is_staff
    assert services.authenticate_bearer(staff_token).caller.principal == "user:carol"


def test_api_token_command_refuses_a_bad_username(db) -> None:
    """wire§4: a username is 1..150 of letters, digits and @.+-_."""
    with pytest.raises(CommandError):
        _token("not a name")
    assert not get_user_model().objects.exists()


def test_an_inactive_users_token_is_unauthenticated(db) -> None:
    """wire§4: a deactivated user's tokens stop working."""
    token = _token("dave")
    get_user_model().objects.filter(username="dave").update(is_active=False)
    assert _refusal(services.authenticate_bearer, token).code is ErrorCode.UNAUTHENTICATED
