"""The export verifier, pure (no Django): R16-08 (history stays exportable and verifiable),
R16-10/R16-11 (a chain verified up to an authority-signed head is authentic), wire.md §6
(event hash and ``prev_hash`` chain from 64 zeros)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.canonical import ZERO_HASH, canonical_bytes, without
from missionweave.protocol.events import event_hash, first_chain_break
from missionweave.protocol.exports import export_lines, header_document, verify_export
from missionweave.protocol.signing import generate_private_key, public_key_text, sign

GROUP = "g-export"
KEY = generate_private_key()
OTHER_KEY = generate_private_key()


def _signed(key: Ed25519PrivateKey, document: dict[str, Any]) -> dict[str, Any]:
    body = without(document, "signature")
    return {**body, "signature": sign(key, canonical_bytes(body))}


def _events(count: int) -> list[str]:
    documents, previous = [], ZERO_HASH
    for sequence in range(1, count + 1):
        event: dict[str, Any] = {
            "event_id": f"ev-{sequence}",
            "group": GROUP,
            "sequence": sequence,
            "type": "mission.created" if sequence % 2 else "work.offered",
            "command_id": f"c-{sequence}",
            "actor": "olga",
            "recorded_at": "2026-11-30T12:00:00.000000Z",
            "payload": {"n": sequence, "text": "naïve ✓ \u2028 line"},
            "prev_hash": previous,
        }
        event["hash"] = event_hash(event)
        previous = event["hash"]
        documents.append(canonical_bytes(event).decode("utf-8"))
    return documents


def _export(count: int, *, key: Ed25519PrivateKey = KEY) -> list[bytes]:
    events = _events(count)
    last_hash = _decoded(events[-1])["hash"] if events else ZERO_HASH
    header = _signed(
        key,
        header_document(
            group=GROUP,
            authority_id="authority.test",
            public_key=public_key_text(key.public_key()),
            exported_at="2026-11-30T12:00:01.000000Z",
        ),
    )
    head = _signed(
        key,
        {
            "group": GROUP,
            "sequence": count,
            "hash": last_hash,
            "signed_at": "2026-11-30T12:00:01.000000Z",
        },
    )
    return list(export_lines(header, events, head))


def _decoded(line: str | bytes) -> dict[str, Any]:
    return json.loads(line)


def _split(data: bytes) -> list[bytes]:
    """Lines as a binary file iterates them (each keeps its ``\\n``)."""
    return data.splitlines(keepends=True)


def _problem(lines: list[bytes], **kwargs: Any) -> str:
    check = verify_export(lines, **kwargs)
    assert not check.ok
    return check.summary()


@pytest.mark.parametrize("count", [0, 1, 7])
def test_a_faithful_export_verifies(count: int) -> None:
    """R16-11: events chain from 64 zeros to the signed head; the summary says how far."""
    check = verify_export(_export(count), public_key=public_key_text(KEY.public_key()))

    assert check.ok, check.summary()
    assert (check.group, check.events, check.head_sequence) == (GROUP, count, count)
    assert check.summary().startswith(f"{GROUP}: {count} events, chain intact")


def test_a_changed_event_names_its_sequence() -> None:
    """wire.md §6: the hash covers the content; the first altered event is named."""
    lines = _export(5)
    event = _decoded(lines[3])
    event["payload"]["n"] = 99
    lines[3] = canonical_bytes(event) + b"\n"

    assert _problem(lines) == "line 4, sequence 3: hash mismatch"


def test_a_recomputed_hash_breaks_the_next_prev_hash() -> None:
    """wire.md §6: re-hashing a forged event does not help; the next ``prev_hash`` breaks."""
    lines = _export(5)
    event = _decoded(lines[3])
    event["payload"]["n"] = 99
    event["hash"] = event_hash(event)
    lines[3] = canonical_bytes(event) + b"\n"

    assert _problem(lines) == "line 5, sequence 4: prev_hash does not chain to the previous event"


def test_a_dropped_event_is_a_gap() -> None:
    lines = _export(5)
    del lines[3]

    assert _problem(lines) == "line 4, sequence 3: gap: sequence 3 missing, found 4"


def test_reordered_events_are_refused() -> None:
    lines = _export(5)
    lines[2], lines[3] = lines[3], lines[2]

    assert _problem(lines) == "line 3, sequence 2: gap: sequence 2 missing, found 3"


def test_a_dropped_tail_does_not_reach_the_signed_head() -> None:
    """R16-11: truncating the log before the head is refused at the head line."""
    lines = _export(5)
    del lines[5]

    assert _problem(lines) == "line 6: signed head 5 does not match the last event 4"


def test_a_missing_head_is_refused() -> None:
    assert _problem(_export(3)[:-1]) == "line 5, sequence 4: missing head line"


def test_a_forged_head_signature_is_refused() -> None:
    lines = _export(3)
    trailer = _decoded(lines[-1])
    trailer["head"]["signature"] = _signed(OTHER_KEY, trailer["head"])["signature"]
    lines[-1] = canonical_bytes(trailer) + b"\n"

    assert _problem(lines) == "line 5: head signature does not verify"


def test_another_authority_key_is_refused() -> None:
    """A file signed consistently under another key is refused when the trusted key is given."""
    lines = _export(3, key=OTHER_KEY)

    assert verify_export(lines).ok
    assert _problem(lines, public_key=public_key_text(KEY.public_key())) == (
        "line 1: authority key differs from the given public key"
    )


def test_non_canonical_whitespace_is_refused() -> None:
    lines = _export(2)
    lines[1] = lines[1].replace(b'":', b'": ', 1)

    assert _problem(lines) == "line 2, sequence 1: not in canonical form"


def test_an_empty_file_and_trailing_content_are_refused() -> None:
    assert _problem([]) == "line 1: empty file: no header"
    assert _problem([*_export(1), b"\n"]) == "line 4: content after the head line"


FAITHFUL = b"".join(_export(6))


@settings(max_examples=400, deadline=None)
@given(position=st.integers(0, len(FAITHFUL) - 1), mask=st.integers(1, 255))
def test_any_flipped_byte_is_detected_at_or_before_its_line(position: int, mask: int) -> None:
    """R16-11: one changed byte anywhere (header, event, head, newline) is always refused,
    and the line named is never after the line the byte is on."""
    data = bytearray(FAITHFUL)
    data[position] ^= mask
    flipped_line = FAITHFUL[:position].count(b"\n") + 1

    check = verify_export(_split(bytes(data)))

    assert not check.ok
    assert check.problem is not None
    assert check.problem.line <= flipped_line, (check.summary(), flipped_line)


def test_the_verifier_agrees_with_first_chain_break() -> None:
    """The verifier and ``first_chain_break`` (wire.md §6) name the same first bad sequence."""
    lines = _export(6)
    event = _decoded(lines[4])
    event["prev_hash"] = ZERO_HASH
    lines[4] = canonical_bytes(event) + b"\n"

    check = verify_export(lines)

    assert check.problem is not None
    assert check.problem.sequence == first_chain_break(_decoded(line) for line in lines[1:-1])
