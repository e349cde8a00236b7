"""An agent's keys: cached per process for the signature check, confirmed under the group
lock by the one statement that reads the session epoch (issue 15 §1), never trusted stale."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.ledger import agents, parallel_signatures
from apps.ledger.models import Event
from apps.ledger.write_path import Outcome, submit_batch, submit_command
from apps.registry.models import AgentKey
from apps.work.models import Mission
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.signing import b64url_encode, generate_private_key, public_key_text
from tests.factories import World, mission_body, now_text


def _key_lookups(captured: CaptureQueriesContext) -> int:
    return sum("registry_agentkey" in query["sql"] for query in captured.captured_queries)


def _submit(world: World, mission: str) -> Outcome:
    document = world.w1.command(world.group, "mission.create", mission_body(mission))
    return submit_command(group_id=world.group, document=document, caller=world.w1.caller)


@pytest.mark.django_db
def test_a_batch_of_signed_commands_reads_the_actors_keys_once(world: World) -> None:
    """wire§4 batch, wire§3 step 3: every item is verified, with one key lookup per batch
    once the process knows the agent's keys: the one under the lock."""
    _submit(world, "m-keys-warm")
    documents = [
        world.w1.command(world.group, "mission.create", mission_body(f"m-keys-{n}"))
        for n in range(5)
    ]

    with CaptureQueriesContext(connection) as captured:
        results = submit_batch(group_id=world.group, documents=documents, caller=world.w1.caller)

    assert all(isinstance(result, Outcome) and result.status == 201 for result in results)
    assert _key_lookups(captured) == 1


@pytest.mark.django_db
def test_a_key_revoked_after_the_process_cached_it_is_refused(world: World) -> None:
    """wire§3 step 3, issue 15 §1: the cached keys accept the signature before the lock;
    the keys read under the lock no longer hold it, so the command is refused, appends
    nothing, and the cache forgets the revoked key."""
    _submit(world, "m-cached")
    AgentKey.objects.filter(agent_id=world.w1.id).update(revoked_at=timezone.now())
    before = Event.objects.filter(group_id=world.group).count()

    with pytest.raises(ProtocolError) as refused:
        _submit(world, "m-after-revocation")

    assert refused.value.code is ErrorCode.INVALID_SIGNATURE
    assert Event.objects.filter(group_id=world.group).count() == before
    assert agents.keys_for_signature(world.w1.id) == ()


@pytest.mark.django_db
def test_a_key_added_after_the_process_cached_the_others_verifies(world: World) -> None:
    """wire§3 step 3: a signature the cached keys refuse is checked again against the keys
    read now, so a key added since (a rotation) is accepted at once."""
    _submit(world, "m-old-key")
    new_key = generate_private_key()
    AgentKey.objects.create(agent_id=world.w1.id, public_key=public_key_text(new_key.public_key()))
    document = world.w1.command(world.group, "mission.create", mission_body("m-new-key"))
    resigned = signed_envelope(new_key, {k: v for k, v in document.items() if k != "signature"})

    outcome = submit_command(group_id=world.group, document=resigned, caller=world.w1.caller)

    assert outcome.status == 201


@pytest.mark.django_db
def test_an_item_signed_with_an_unknown_key_is_still_refused_inside_a_batch(world: World) -> None:
    """wire§3 step 3: the memoised keys verify each item on its own; a forged one is refused
    and the items around it are applied."""
    good = world.w1.command(world.group, "mission.create", mission_body("m-good"))
    forged = world.w1.command(world.group, "mission.create", mission_body("m-forged"))
    forged = signed_envelope(
        generate_private_key(), {k: v for k, v in forged.items() if k != "signature"}
    )
    after = world.w1.command(world.group, "mission.create", mission_body("m-after"))

    first, refused, last = submit_batch(
        group_id=world.group, documents=[good, forged, after], caller=world.w1.caller
    )

    assert isinstance(first, Outcome)
    assert isinstance(refused, ProtocolError)
    assert refused.code is ErrorCode.INVALID_SIGNATURE
    assert isinstance(last, Outcome)


@pytest.mark.django_db
def test_a_batch_checked_on_several_threads_refuses_exactly_the_items_verify_refuses(
    world: World,
) -> None:
    """wire§3 steps 2–4, wire§4 batch: a batch large enough for its signatures to be
    checked side by side (``parallel_signatures``) answers each item as ``verify`` alone
    would: a forged signature, a body changed after signing, a clock 400 s off and a
    malformed envelope are refused at their places; a key added after the process cached
    the others verifies; every other item is applied, in order."""
    _submit(world, "m-warm")  # the process caches w1's keys
    new_key = generate_private_key()
    AgentKey.objects.create(agent_id=world.w1.id, public_key=public_key_text(new_key.public_key()))
    documents: list[object] = [
        world.w1.command(world.group, "mission.create", mission_body(f"m-par-{n}"))
        for n in range(3 * parallel_signatures.PARALLEL_FROM)
    ]

    def resigned(index: int, key: Any, **changes: Any) -> None:
        document = documents[index]
        assert isinstance(document, dict)
        unsigned = {k: v for k, v in document.items() if k != "signature"} | changes
        documents[index] = signed_envelope(key, unsigned)

    resigned(3, generate_private_key())  # forged
    resigned(20, new_key)  # the rotated-in key
    resigned(31, world.w1.key, issued_at=now_text(-400))
    tampered = documents[40]
    assert isinstance(tampered, dict)
    documents[40] = {**tampered, "body": mission_body("m-par-tampered")}
    documents[45] = {"not": "an envelope"}

    results = submit_batch(group_id=world.group, documents=documents, caller=world.w1.caller)

    refused = {
        index: result.code
        for index, result in enumerate(results)
        if isinstance(result, ProtocolError)
    }
    assert refused == {
        3: ErrorCode.INVALID_SIGNATURE,
        31: ErrorCode.CLOCK_SKEW,
        40: ErrorCode.INVALID_SIGNATURE,
        45: ErrorCode.MALFORMED,
    }
    assert all(
        isinstance(result, Outcome) and result.status == 201
        for index, result in enumerate(results)
        if index not in refused
    )


@pytest.mark.django_db
def test_a_stored_key_of_small_order_verifies_nothing_and_breaks_nothing(world: World) -> None:
    """wire§1 (clarified 2026-12-04), wire§3 step 3: a key stored before registration
    refused keys of small order — here the identity point — is left out: the forgery it
    would admit under OpenSSL is refused ``INVALID_SIGNATURE``, not answered with a 500,
    and the agent's real key still verifies, alone and in a batch."""
    identity = bytes([1]) + bytes(31)
    AgentKey.objects.create(agent_id=world.w1.id, public_key=b64url_encode(identity))
    forged = world.w1.command(world.group, "mission.create", mission_body("m-identity"))
    forged["signature"] = b64url_encode(identity + bytes(32))  # R = identity, S = 0

    with pytest.raises(ProtocolError) as refused:
        submit_command(group_id=world.group, document=forged, caller=world.w1.caller)
    real = world.w1.command(world.group, "mission.create", mission_body("m-real"))
    accepted = submit_command(group_id=world.group, document=real, caller=world.w1.caller)
    batch = submit_batch(
        group_id=world.group,
        documents=[
            world.w1.command(world.group, "mission.create", mission_body(f"m-b{n}"))
            for n in range(parallel_signatures.PARALLEL_FROM)
        ],
        caller=world.w1.caller,
    )

    assert refused.value.code is ErrorCode.INVALID_SIGNATURE
    assert accepted.status == 201
    assert all(isinstance(item, Outcome) and item.status == 201 for item in batch)
    assert not Mission.objects.filter(group_id=world.group, mission_id="m-identity").exists()
