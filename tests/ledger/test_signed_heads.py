"""The authority signs each head once and chains its heads (issue 33 §2; wire.md §4; R16-11).

One signed head per sequence of a group, each naming the head signed before it, at most one
successor per head, even when servers sign at once; a log behind or beside a head already
signed is refused (``INTERNAL``), never signed over. Real PostgreSQL and real threads.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from django.db import connection

from apps.ledger import authority
from apps.ledger.models import GroupLog, SignedHead
from apps.ledger.write_path import submit_command
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.heads import head_contradiction, reference
from missionweave.protocol.signing import document_signature_holds, parse_public_key
from tests.factories import World, build_world, mission_body
from tests.ledger.concurrency import run_in_threads
from tests.ledger.rewrites import rewrite_history


def _accept(world: World, count: int = 1) -> None:
    for _ in range(count):
        document = world.w1.command(world.group, "mission.create", mission_body())
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)


def _head(group: str) -> dict[str, Any]:
    return authority.signed_head(GroupLog.objects.get(group_id=group))


@pytest.mark.django_db
def test_a_head_is_signed_once_and_served_again_byte_for_byte(world: World) -> None:
    _accept(world, 2)
    first, again = _head(world.group), _head(world.group)
    assert first == again
    assert SignedHead.objects.filter(group_id=world.group).count() == 1
    key = parse_public_key(authority.public_key())
    assert document_signature_holds(key, first)
    stored = SignedHead.objects.get(group_id=world.group)
    assert json.loads(stored.document) == first


@pytest.mark.django_db
def test_each_head_names_the_one_signed_before_it(world: World) -> None:
    heads = []
    for _ in range(3):
        _accept(world)
        heads.append(_head(world.group))
    assert heads[0]["previous"] is None
    assert heads[1]["previous"] == reference(heads[0])
    assert heads[2]["previous"] == reference(heads[1])
    assert head_contradiction(heads[0], heads[2]) is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent signers need PostgreSQL")
def test_servers_signing_at_once_leave_one_chain() -> None:
    """Eight threads sign while commands land between them: one head per sequence, each
    head the successor of exactly one, so the heads form a single chain."""
    world = build_world()

    def sign(index: int) -> dict[str, Any]:
        if index % 2:
            _accept(world)
        return _head(world.group)

    served = run_in_threads(8, sign)
    rows = list(
        SignedHead.objects.filter(group_id=world.group)
        .order_by("sequence")
        .values_list("document", flat=True)
    )
    chain = [json.loads(text) for text in rows]
    assert len({head["sequence"] for head in chain}) == len(chain)
    for earlier, later in itertools.pairwise(chain):
        assert later["previous"] == reference(earlier)
    assert all(head in chain for head in served)


@pytest.mark.django_db
def test_a_log_rewritten_under_a_signed_head_is_not_signed_over(world: World) -> None:
    """The owner rewrites the log but leaves the signed heads: the authority notices its own
    head contradicts the log and refuses to sign (``INTERNAL``), signing nothing. An owner
    who deletes the heads too gets a new one signed: the contradiction is then for the
    clients that kept the old one to prove (tests/client/test_forks.py)."""
    _accept(world, 3)
    signed = _head(world.group)
    rewrite_history(world.group, from_sequence=2, cover_tracks=False)
    with pytest.raises(ProtocolError) as refused:
        _head(world.group)
    assert refused.value.code == ErrorCode.INTERNAL
    assert refused.value.details["signed_head"]["sequence"] == signed["sequence"]

    assert SignedHead.objects.filter(group_id=world.group).count() == 1
    rewrite_history(world.group, from_sequence=2)  # deletes the heads from 2 on
    before = SignedHead.objects.filter(group_id=world.group).count()
    assert _head(world.group)["sequence"] == signed["sequence"]  # signed again: the owner's
    assert SignedHead.objects.filter(group_id=world.group).count() == before + 1


@pytest.mark.django_db
def test_a_server_that_read_the_log_before_a_later_head_was_signed_serves_the_later_one(
    world: World,
) -> None:
    """A GET /head reads the head row, a command lands and another server signs the newer
    head before this one signs: its view is stale, not a cut history. It reads the log
    again and serves the newer head, signing nothing more."""
    _accept(world)
    stale = GroupLog.objects.get(group_id=world.group)
    _accept(world)
    newer = _head(world.group)
    assert newer["sequence"] == stale.head_sequence + 1
    assert authority.signed_head(stale) == newer
    assert SignedHead.objects.filter(group_id=world.group).count() == 1
