"""Signed heads that contradict each other, pure (issue 33 §2; R16-10, R16-11).

Given a head the client verified, when a later head, event or export is offered, then the
contradiction is named (or none is found for a faithful history). The authority's heads form
a chain (each names the one signed before it), so a later head must follow the known one.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.canonical import ZERO_HASH, canonical_bytes
from missionweave.protocol.events import event_hash
from missionweave.protocol.exports import export_lines, header_document, verify_export
from missionweave.protocol.heads import (
    event_contradiction,
    head_contradiction,
    head_document,
    reference,
)
from missionweave.protocol.signing import generate_private_key, public_key_text, sign_document

GROUP = "g-heads"
KEY = generate_private_key()
SIGNED_AT = "2026-12-06T12:00:00.000000Z"


def _chain(count: int, *, forged_at: int | None = None) -> list[dict[str, Any]]:
    events, previous = [], ZERO_HASH
    for sequence in range(1, count + 1):
        event: dict[str, Any] = {
            "event_id": f"ev-{sequence}",
            "group": GROUP,
            "sequence": sequence,
            "type": "mission.created",
            "command_id": f"c-{sequence}",
            "actor": "olga",
            "recorded_at": SIGNED_AT,
            "payload": {"n": sequence, "forged": sequence == forged_at},
            "prev_hash": previous,
        }
        event["hash"] = event_hash(event)
        previous = event["hash"]
        events.append(event)
    return events


def _heads(events: list[dict[str, Any]], at: list[int]) -> dict[int, dict[str, Any]]:
    """The heads the authority signs at the sequences ``at``, in order, each after the last."""
    signed: dict[int, dict[str, Any]] = {}
    previous: dict[str, Any] | None = None
    for sequence in at:
        hash_ = events[sequence - 1]["hash"] if sequence else ZERO_HASH
        head = sign_document(
            KEY,
            head_document(
                group=GROUP,
                sequence=sequence,
                hash_=hash_,
                previous=None if previous is None else reference(previous),
                signed_at=SIGNED_AT,
            ),
        )
        signed[sequence] = previous = head
    return signed


def _export(events: list[dict[str, Any]], head: dict[str, Any]) -> list[bytes]:
    header = sign_document(
        KEY,
        header_document(
            group=GROUP,
            authority_id="authority.test",
            public_key=public_key_text(KEY.public_key()),
            exported_at=SIGNED_AT,
        ),
    )
    documents = [canonical_bytes(event).decode("utf-8") for event in events]
    return list(export_lines(header, documents, head))


def test_a_head_that_follows_the_known_one_contradicts_nothing() -> None:
    heads = _heads(_chain(6), [2, 4, 6])
    assert head_contradiction(heads[2], heads[4]) is None
    assert head_contradiction(heads[2], heads[6]) is None  # after a later one: still follows
    assert head_contradiction(heads[4], heads[4]) is None


def test_two_heads_for_one_sequence_are_a_fork() -> None:
    honest, forged = _heads(_chain(5), [5])[5], _heads(_chain(5, forged_at=3), [5])[5]
    found = head_contradiction(honest, forged)
    assert found is not None
    assert str(found).startswith("fork: two heads signed for sequence 5")
    assert honest["hash"] in str(found)
    assert forged["hash"] in str(found)


def test_a_head_behind_the_known_one_means_history_was_cut() -> None:
    heads = _heads(_chain(5), [3, 5])
    found = head_contradiction(heads[5], heads[3])
    assert found is not None
    assert "history was cut: the head went back from 5 to 3" in str(found)


def test_a_later_head_that_skips_or_replaces_the_known_one_is_a_fork() -> None:
    """Signed over a rewritten history: the later head names no predecessor at or after the
    known one, or names another head at its sequence."""
    known = _heads(_chain(6), [2, 4])[4]
    skipped = _heads(_chain(6, forged_at=3), [2, 6])[6]
    replaced = _heads(_chain(6, forged_at=3), [2, 4, 6])[6]
    assert "was signed after head 2, not after the head 4" in str(
        head_contradiction(known, skipped)
    )
    assert "follows another head at 4" in str(head_contradiction(known, replaced))


def test_an_event_at_the_known_heads_sequence_must_have_its_hash() -> None:
    known = _heads(_chain(4), [4])[4]
    assert event_contradiction(known, _chain(4)[3]) is None
    assert event_contradiction(known, _chain(4)[2]) is None  # another sequence: not its to say
    found = event_contradiction(known, _chain(4, forged_at=1)[3])
    assert found is not None
    assert str(found).startswith("fork: event 4 has hash")


@settings(max_examples=60, deadline=None)
@given(
    length=st.integers(min_value=2, max_value=12),
    data=st.data(),
)
def test_any_rewrite_at_or_before_a_known_head_fails_the_export(
    length: int, data: st.DataObject
) -> None:
    """Whatever event at or before the known head is rewritten (and the chain re-hashed after
    it), the forged export verifies on its own and fails with the known head."""
    known_at = data.draw(st.integers(min_value=1, max_value=length))
    forged_at = data.draw(st.integers(min_value=1, max_value=known_at))
    known = _heads(_chain(length), [known_at])[known_at]
    forged = _chain(length, forged_at=forged_at)
    forged_head = _heads(forged, [length])[length]
    lines = _export(forged, forged_head)
    assert verify_export(lines).ok
    check = verify_export(lines, known_heads=[known])
    assert not check.ok
    assert "fork" in check.summary()


def test_a_faithful_export_agrees_with_every_known_head() -> None:
    events = _chain(8)
    heads = _heads(events, [0, 3, 5, 8])
    check = verify_export(_export(events, heads[8]), known_heads=[heads[3], heads[5], heads[0]])
    assert check.ok, check.summary()


def test_a_known_head_under_another_key_or_group_is_refused() -> None:
    events = _chain(3)
    heads = _heads(events, [3])
    stranger = sign_document(generate_private_key(), {**heads[3]})
    assert (
        "known head 1: signature does not verify"
        in verify_export(_export(events, heads[3]), known_heads=[stranger]).summary()
    )
    other_group = sign_document(KEY, {**heads[3], "group": "g-other"})
    assert (
        "not a head of g-heads"
        in verify_export(_export(events, heads[3]), known_heads=[other_group]).summary()
    )
