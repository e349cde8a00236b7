"""``manage.py export_group`` and ``manage.py verify_export`` against a real PostgreSQL log.

R16-08: history is never deleted and stays exportable; R16-10/R16-11: a chain verified up to
the authority-signed head is authentic; wire.md §6: every event line is the stored document,
byte for byte, hashed and chained from 64 zeros. The group is built through the real write
path (grants, missions, a WorkItem authorised, offered, accepted and started).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from apps.ledger import authority
from apps.ledger.history import history
from apps.ledger.models import Event, GroupLog
from missionweave.protocol.canonical import canonical_bytes, without
from missionweave.protocol.signing import generate_private_key, public_key_text, sign
from tests import factories
from tests.factories import World, mission_body
from tests.work.lifecycle import contract, offer_body, offer_entry, submit


def _build(world: World) -> None:
    """Several command types through the one write path."""
    submit(world.olga, world.group, "mission.create", mission_body("m-1"))
    submit(world.olga, world.group, "mission.create", mission_body("m-2", parent="m-1"))
    world.w1.open_session()
    world.w2.open_session()
    body = {"work_item": "wi-1", "mission": "m-2", "contract": contract(), "depends_on": []}
    submit(world.w1, world.group, "work.authorize", body)
    submit(world.w1, world.group, "work.offer", offer_body("wi-1", [offer_entry("o-1", world.w2)]))
    accept = {"work_item": "wi-1", "offer": "o-1", "contract_revision": 1}
    epoch = submit(world.w2, world.group, "work.accept_offer", accept).body["result"][
        "ownership_epoch"
    ]
    submit(world.w2, world.group, "work.start", {"work_item": "wi-1", "ownership_epoch": epoch})


def _export(group: str, path: Path) -> None:
    call_command("export_group", group, "--output", str(path), stderr=io.StringIO())


def _verify(path: Path, *args: str) -> str:
    out = io.StringIO()
    call_command("verify_export", str(path), *args, stdout=out)
    return out.getvalue()


def _refusal(path: Path, *args: str) -> str:
    with pytest.raises(CommandError) as failure:
        call_command("verify_export", str(path), *args, stdout=io.StringIO())
    return str(failure.value)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.fixture
def exported(world: World, tmp_path: Path) -> tuple[World, Path]:
    _build(world)
    path = tmp_path / "export.jsonl"
    _export(world.group, path)
    return world, path


@pytest.mark.django_db
def test_an_export_holds_every_event_as_stored_and_verifies(exported: tuple[World, Path]) -> None:
    """R16-08, wire.md §6: header, each stored document byte for byte in order, signed head."""
    world, path = exported
    lines = _lines(path)
    stored = list(
        Event.objects.filter(group_id=world.group)
        .order_by("sequence")
        .values_list("document", "type")
    )
    head = GroupLog.objects.get(group_id=world.group)

    assert len({kind for _, kind in stored}) >= 6  # grants, missions, work.* events
    assert [line[:-1].decode() for line in lines[1:-1]] == [document for document, _ in stored]
    header, trailer = json.loads(lines[0]), json.loads(lines[-1])
    assert header["kind"] == "mwp.export/1"
    assert header["group"] == world.group
    assert header["authority"] == {
        "authority_id": authority.authority_id(),
        "public_key": authority.public_key(),
    }
    assert trailer["kind"] == "head"
    assert (trailer["head"]["sequence"], trailer["head"]["hash"]) == (
        head.head_sequence,
        head.head_hash,
    )
    assert _verify(path, "--public-key", authority.public_key()) == (
        f"{world.group}: {head.head_sequence} events, chain intact up to the signed head "
        f"{head.head_sequence} ({head.head_hash})\n"
    )


@pytest.mark.django_db
def test_stdout_export_equals_the_file(exported: tuple[World, Path], tmp_path: Path) -> None:
    world, path = exported
    out = io.StringIO()
    call_command("export_group", world.group, stdout=out)
    copy = tmp_path / "stdout.jsonl"
    copy.write_text(out.getvalue(), encoding="utf-8")

    assert _lines(copy)[1:-1] == _lines(path)[1:-1]
    assert _verify(copy).startswith(f"{world.group}: ")


@pytest.mark.django_db
def test_one_flipped_byte_in_an_event_is_named(exported: tuple[World, Path]) -> None:
    """wire.md §6: a changed byte in event 4's payload is a hash mismatch at sequence 4."""
    _, path = exported
    lines = _lines(path)
    at = lines[4].index(b'"payload":') + len(b'"payload":{"') + 1
    line = bytearray(lines[4])
    line[at] ^= 0x01
    lines[4] = bytes(line)
    path.write_bytes(b"".join(lines))

    assert _refusal(path) == "line 5, sequence 4: hash mismatch"


@pytest.mark.django_db
def test_a_dropped_line_is_a_gap(exported: tuple[World, Path]) -> None:
    _, path = exported
    lines = _lines(path)
    del lines[3]
    path.write_bytes(b"".join(lines))

    assert _refusal(path) == "line 4, sequence 3: gap: sequence 3 missing, found 4"


@pytest.mark.django_db
def test_two_reordered_lines_are_refused(exported: tuple[World, Path]) -> None:
    _, path = exported
    lines = _lines(path)
    lines[5], lines[6] = lines[6], lines[5]
    path.write_bytes(b"".join(lines))

    assert _refusal(path) == "line 6, sequence 5: gap: sequence 5 missing, found 6"


@pytest.mark.django_db
def test_a_tampered_head_signature_is_refused(exported: tuple[World, Path]) -> None:
    """R16-11: the head must carry the authority's signature."""
    _, path = exported
    lines = _lines(path)
    trailer: dict[str, Any] = json.loads(lines[-1])
    forger = generate_private_key()
    body = without(trailer["head"], "signature")
    trailer["head"]["signature"] = sign(forger, canonical_bytes(body))
    lines[-1] = canonical_bytes(trailer) + b"\n"
    path.write_bytes(b"".join(lines))

    assert _refusal(path) == f"line {len(lines)}: head signature does not verify"


@pytest.mark.django_db
def test_another_authority_key_is_refused(exported: tuple[World, Path]) -> None:
    _, path = exported
    other = public_key_text(generate_private_key().public_key())

    # with "=": a base64url key may start with "-", which argparse would take for an option
    assert _refusal(path, f"--public-key={other}") == (
        "line 1: authority key differs from the given public key"
    )


@pytest.mark.django_db
def test_an_empty_group_exports_head_zero_and_verifies(tmp_path: Path) -> None:
    """R16-08: a group with no events yet exports a header and the signed head 0."""
    org = factories.organization("org-empty")
    factories.group("g-empty", org)
    path = tmp_path / "empty.jsonl"

    _export("g-empty", path)

    lines = _lines(path)
    assert len(lines) == 2
    assert json.loads(lines[1])["head"]["sequence"] == 0
    assert _verify(path).startswith("g-empty: 0 events, chain intact up to the signed head 0 ")


@pytest.mark.django_db
def test_an_unknown_group_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no group 'g-none'"):
        _export("g-none", tmp_path / "none.jsonl")


@pytest.mark.django_db
def test_history_reads_in_small_pages(world: World) -> None:
    """The export streams keyset pages; page size does not change what is read."""
    _build(world)
    head = GroupLog.objects.get(group_id=world.group).head_sequence

    assert list(history(world.group, through=head, page=2)) == list(
        Event.objects.filter(group_id=world.group)
        .order_by("sequence")
        .values_list("document", flat=True)
    )
