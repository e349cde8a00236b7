"""Agent sessions (wire.md §5) and bearer authentication (wire.md §3 step 1, §4)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from apps.registry import services
from apps.registry.models import Agent, AgentSession, SessionNonce
from apps.work import sessions
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.signing import generate_private_key
from tests import factories
from tests.factories import AgentPersona, now_text
from tests.ledger.concurrency import run_in_threads


@pytest.fixture
def w1(db) -> AgentPersona:
    return factories.agent("w1", factories.organization())


def _refusal(call: Callable[..., object], *args: Any, **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as refused:
        call(*args, **kwargs)
    return refused.value


def test_each_session_raises_the_agent_epoch_by_one(w1: AgentPersona) -> None:
    """wire§5, R11.3-10: epochs 1, 2, 3 for three sessions; the answer says which."""
    epochs = []
    for _ in range(3):
        opened = sessions.session_open(body=w1.session_body())
        epochs.append(opened.session.epoch)
        document = services.session_document(opened.session, opened.token)
        assert document["session_epoch"] == opened.session.epoch
        assert document["token"] == opened.token
    assert epochs == [1, 2, 3]
    assert Agent.objects.get(pk="w1").session_epoch == 3
    assert AgentSession.objects.filter(agent_id="w1").count() == 3


def test_the_token_of_a_replaced_session_is_stale(w1: AgentPersona) -> None:
    """wire§4, R11.3-10: the previous token is STALE_SESSION at once; the new one works."""
    old = sessions.session_open(body=w1.session_body())
    assert services.authenticate_bearer(old.token).caller.session_epoch == 1
    new = sessions.session_open(body=w1.session_body())

    refusal = _refusal(services.authenticate_bearer, old.token)

    assert refusal.code is ErrorCode.STALE_SESSION
    assert refusal.status == 401
    current = services.authenticate_bearer(new.token)
    assert current.caller.principal == "agent:w1"
    assert current.caller.kind == "agent"
    assert current.caller.session_epoch == 2
    assert current.session is not None
    assert current.session.session_id == new.session.session_id


def test_an_expired_session_is_unauthenticated(w1: AgentPersona) -> None:
    """wire§4: a token past its expiry is UNAUTHENTICATED, even for the current session."""
    opened = sessions.session_open(body=w1.session_body())
    assert opened.session.expires_at > timezone.now() + timedelta(hours=23)
    AgentSession.objects.filter(pk=opened.session.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert _refusal(services.authenticate_bearer, opened.token).code is ErrorCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    "token", ["", "nonsense", "mws_unknown", "mwt_unknown", "Bearer mws_x", "mws_" + "a" * 43]
)
def test_unknown_tokens_are_unauthenticated(w1: AgentPersona, token: str) -> None:
    """wire§4: a missing or unknown token is 401 UNAUTHENTICATED."""
    sessions.session_open(body=w1.session_body())
    assert _refusal(services.authenticate_bearer, token).code is ErrorCode.UNAUTHENTICATED


def test_a_replayed_nonce_is_refused_and_opens_nothing(w1: AgentPersona) -> None:
    """wire§5: the same signed body twice is REPLAYED_NONCE; the epoch does not move."""
    body = w1.session_body()
    sessions.session_open(body=body)

    refusal = _refusal(sessions.session_open, body=body)

    assert refusal.code is ErrorCode.REPLAYED_NONCE
    assert refusal.status == 401
    nonce_reused_fresh_time = w1.session_body(nonce=body["nonce"], issued_at=now_text(1))
    assert _refusal(sessions.session_open, body=nonce_reused_fresh_time).code is (
        ErrorCode.REPLAYED_NONCE
    )
    assert Agent.objects.get(pk="w1").session_epoch == 1
    assert AgentSession.objects.filter(agent_id="w1").count() == 1


def test_a_nonce_is_remembered_per_agent(w1: AgentPersona) -> None:
    """wire§5: a nonce seen for one agent may still be used by another."""
    w2 = factories.agent("w2", "org-acme")
    nonce = secrets.token_urlsafe(18)
    sessions.session_open(body=w1.session_body(nonce=nonce))
    assert sessions.session_open(body=w2.session_body(nonce=nonce)).session.epoch == 1


def test_bad_signature_unknown_agent_and_old_issued_at_are_refused(w1: AgentPersona) -> None:
    """wire§5: INVALID_SIGNATURE for a wrong key or an unknown agent, CLOCK_SKEW outside
    ±300 s; none of them opens a session or burns the nonce."""
    impostor = AgentPersona("w1", generate_private_key())
    assert _refusal(sessions.session_open, body=impostor.session_body()).code is (
        ErrorCode.INVALID_SIGNATURE
    )
    ghost = AgentPersona("ghost", generate_private_key())
    assert _refusal(sessions.session_open, body=ghost.session_body()).code is (
        ErrorCode.INVALID_SIGNATURE
    )
    tampered = {**w1.session_body(), "nonce": secrets.token_urlsafe(18)}
    assert _refusal(sessions.session_open, body=tampered).code is ErrorCode.INVALID_SIGNATURE
    for offset in (-301, 301):
        stale = w1.session_body(issued_at=now_text(offset))
        assert _refusal(sessions.session_open, body=stale).code is ErrorCode.CLOCK_SKEW
    assert not AgentSession.objects.exists()
    assert not SessionNonce.objects.exists()


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"nonce": "short"}, "$.nonce"),
        ({"nonce": "x" * 129}, "$.nonce"),
        ({"nonce": 12345678901234567}, "$.nonce"),
        ({"issued_at": "yesterday"}, "$.issued_at"),
        ({"agent": "not an id"}, "$.agent"),
        ({"signature": 7}, "$.signature"),
        ({"extra": 1}, "$.extra"),
    ],
)
def test_malformed_session_bodies_name_the_field(w1: AgentPersona, change: dict, path: str) -> None:
    """wire§5, wire§8: a malformed body is MALFORMED with the JSON path of the bad field."""
    refusal = _refusal(sessions.session_open, body={**w1.session_body(), **change})
    assert refusal.code is ErrorCode.MALFORMED
    assert refusal.details["path"] == path


def test_a_missing_field_and_a_non_object_body_are_malformed(w1: AgentPersona) -> None:
    """wire§5: every field is required; the body is an object."""
    body = w1.session_body()
    del body["nonce"]
    refusal = _refusal(sessions.session_open, body=body)
    assert (refusal.code, refusal.details["path"]) == (ErrorCode.MALFORMED, "$.nonce")
    assert _refusal(sessions.session_open, body=[1]).code is ErrorCode.MALFORMED


def test_the_session_answer_lists_the_agents_memberships(db) -> None:
    """wire§5: ``memberships`` maps each group onto its roles and epoch."""
    world = factories.build_world()
    opened = sessions.session_open(body=world.w1.session_body())
    document = services.session_document(opened.session, opened.token)
    assert document["memberships"] == {world.group: {"roles": ["coordinator"], "epoch": 1}}
    assert document["session_id"].startswith("ses_")
    assert document["expires_at"].endswith("Z")


@pytest.mark.django_db(transaction=True)
def test_the_same_session_body_from_10_threads_opens_exactly_one_session() -> None:
    """wire§5: a nonce is accepted once even when the copies race; the rest are
    REPLAYED_NONCE and the epoch rises by exactly one."""
    w1 = factories.agent("w1", factories.organization())
    body = w1.session_body()

    def work(_: int) -> str:
        try:
            return str(sessions.session_open(body=dict(body)).session.epoch)
        except ProtocolError as refusal:
            return refusal.code.value

    answers = run_in_threads(10, work)

    assert sorted(answers) == ["1"] + [ErrorCode.REPLAYED_NONCE.value] * 9
    assert Agent.objects.get(pk="w1").session_epoch == 1
    assert AgentSession.objects.filter(agent_id="w1").count() == 1


@pytest.mark.django_db(transaction=True)
def test_sessions_opened_concurrently_get_distinct_consecutive_epochs() -> None:
    """wire§5, R11.3-10: ten racing sessions get epochs 1..10; only the last token is valid."""
    w1 = factories.agent("w1", factories.organization())
    bodies = [w1.session_body() for _ in range(10)]

    opened = run_in_threads(10, lambda index: sessions.session_open(body=bodies[index]))

    assert sorted(o.session.epoch for o in opened) == list(range(1, 11))
    for session in opened:
        if session.session.epoch == 10:
            assert services.authenticate_bearer(session.token).caller.session_epoch == 10
        else:
            refusal = _refusal(services.authenticate_bearer, session.token)
            assert refusal.code is ErrorCode.STALE_SESSION
