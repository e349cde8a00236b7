"""A batch is one request by one caller: the actor's keys are read once for all its items."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.ledger.write_path import Outcome, submit_batch
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.signing import generate_private_key
from tests.factories import World, mission_body


def _key_lookups(captured: CaptureQueriesContext) -> int:
    return sum("registry_agentkey" in query["sql"] for query in captured.captured_queries)


@pytest.mark.django_db
def test_a_batch_of_signed_commands_reads_the_actors_keys_once(world: World) -> None:
    """wire§4 batch, wire§3 step 3: every item is verified, with one key lookup per batch."""
    documents = [
        world.w1.command(world.group, "mission.create", mission_body(f"m-keys-{n}"))
        for n in range(5)
    ]

    with CaptureQueriesContext(connection) as captured:
        results = submit_batch(group_id=world.group, documents=documents, caller=world.w1.caller)

    assert all(isinstance(result, Outcome) and result.status == 201 for result in results)
    assert _key_lookups(captured) == 1


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
