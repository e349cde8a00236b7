"""The command envelope (wire.md §3): shape, order of the pure checks, skew, content digest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from missionweave.protocol.commands import PUBLIC_COMMAND_TYPES
from missionweave.protocol.envelope import (
    check_clock_skew,
    check_signature,
    parse_envelope,
    signed_envelope,
    signing_bytes,
)
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.signing import generate_private_key

GROUP = "g-research"
EXTENSION = "urn:missionweaveprotocol:extension:bounded-offline-execution"
KEY = generate_private_key()


def agent_document(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": "cmd-7f3a",
        "type": "mission.create",
        "group": GROUP,
        "actor": "agent:w1",
        "session_epoch": 4,
        "membership_epoch": 2,
        "issued_at": "2026-11-30T10:00:00Z",
        "body": {"mission": "m-1", "goal": "g", "budgets": {}},
    }
    document = signed_envelope(KEY, document)
    for name, value in changes.items():
        if value is _DROP:
            document.pop(name, None)
        else:
            document[name] = value
    return document


def human_document(**changes: Any) -> dict[str, Any]:
    document = agent_document(actor="user:olga", **changes)
    for name in ("session_epoch", "signature"):
        if name not in changes:
            document.pop(name)
    return document


_DROP = object()


def parse(document: object, **kwargs: Any):  # type: ignore[no-untyped-def]
    kwargs.setdefault("path_group", GROUP)
    kwargs.setdefault("known_types", PUBLIC_COMMAND_TYPES)
    return parse_envelope(document, **kwargs)


def refused(document: object, **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        parse(document, **kwargs)
    return caught.value


def test_a_well_formed_agent_envelope_parses() -> None:
    """wire§3: the example envelope's fields become the Envelope."""
    envelope = parse(agent_document())
    assert (envelope.actor_kind, envelope.actor_name) == ("agent", "w1")
    assert envelope.session_epoch == 4
    assert envelope.membership_epoch == 2
    assert envelope.issued_at == datetime(2026, 11, 30, 10, tzinfo=UTC)
    assert envelope.extensions == {}


def test_a_well_formed_human_envelope_parses() -> None:
    """wire§3: a human's command has no signature and no session_epoch."""
    envelope = parse(human_document())
    assert (envelope.actor_kind, envelope.actor_name) == ("user", "olga")
    assert envelope.session_epoch is None
    assert envelope.signature is None


_MALFORMED: list[tuple[str, object, str]] = [
    ("not an object", [], "$"),
    ("a string", "cmd", "$"),
    ("null", None, "$"),
    *[
        (f"missing {name}", agent_document(**{name: _DROP}), f"$.{name}")
        for name in ("id", "type", "group", "actor", "membership_epoch", "issued_at", "body")
    ],
    ("unknown field", agent_document(extra=1), "$.extra"),
    ("empty id", agent_document(id=""), "$.id"),
    ("id of 129 characters", agent_document(id="a" * 129), "$.id"),
    ("id with a space", agent_document(id="cmd 1"), "$.id"),
    ("id with a slash", agent_document(id="cmd/1"), "$.id"),
    ("numeric id", agent_document(id=7), "$.id"),
    ("type not a string", agent_document(type=["mission.create"]), "$.type"),
    ("group not a string", agent_document(group=1), "$.group"),
    ("group of another path", agent_document(group="g-other"), "$.group"),
    ("actor without kind", agent_document(actor="w1"), "$.actor"),
    ("actor of unknown kind", agent_document(actor="robot:w1"), "$.actor"),
    ("actor with empty name", agent_document(actor="agent:"), "$.actor"),
    ("actor not a string", agent_document(actor={"agent": "w1"}), "$.actor"),
    ("membership_epoch as a string", agent_document(membership_epoch="1"), "$.membership_epoch"),
    ("membership_epoch as a bool", agent_document(membership_epoch=True), "$.membership_epoch"),
    ("membership_epoch negative", agent_document(membership_epoch=-1), "$.membership_epoch"),
    ("membership_epoch a float", agent_document(membership_epoch=1.5), "$.membership_epoch"),
    ("membership_epoch 1.0", agent_document(membership_epoch=1.0), "$.membership_epoch"),
    ("membership_epoch null", agent_document(membership_epoch=None), "$.membership_epoch"),
    ("issued_at with offset", agent_document(issued_at="2026-11-30T10:00:00+00:00"), "$.issued_at"),
    ("issued_at without zone", agent_document(issued_at="2026-11-30T10:00:00"), "$.issued_at"),
    ("issued_at a date", agent_document(issued_at="2026-11-30"), "$.issued_at"),
    ("issued_at month 13", agent_document(issued_at="2026-13-30T10:00:00Z"), "$.issued_at"),
    ("issued_at hour 24", agent_document(issued_at="2026-11-30T24:00:00Z"), "$.issued_at"),
    ("issued_at a number", agent_document(issued_at=1764496800), "$.issued_at"),
    ("body a list", agent_document(body=[]), "$.body"),
    ("body a string", agent_document(body="{}"), "$.body"),
    ("extensions a list", agent_document(extensions=[EXTENSION]), "$.extensions"),
    ("agent without session_epoch", agent_document(session_epoch=_DROP), "$.session_epoch"),
    ("session_epoch as a string", agent_document(session_epoch="1"), "$.session_epoch"),
    ("session_epoch as a bool", agent_document(session_epoch=False), "$.session_epoch"),
    ("session_epoch negative", agent_document(session_epoch=-4), "$.session_epoch"),
    ("agent without signature", agent_document(signature=_DROP), "$.signature"),
    ("signature not a string", agent_document(signature=None), "$.signature"),
    ("human with a signature", human_document(signature="AAAA"), "$.signature"),
    ("human with a session_epoch", human_document(session_epoch=1), "$.session_epoch"),
    ("human with session_epoch null", human_document(session_epoch=None), "$.session_epoch"),
]


@pytest.mark.parametrize(
    ("document", "path"),
    [pytest.param(doc, path, id=name) for name, doc, path in _MALFORMED],
)
def test_each_malformation_is_malformed_with_its_json_path(document: object, path: str) -> None:
    """wire§3 step 2: a malformed envelope is MALFORMED and details.path names the field."""
    error = refused(document)
    assert error.code is ErrorCode.MALFORMED
    assert error.status == 400
    assert error.details["path"] == path
    assert error.requirement == "wire§3"


def test_unsupported_extension_is_refused_and_named() -> None:
    """wire§3 step 2 / R11.5-07: an extension the authority does not support."""
    error = refused(agent_document(extensions={EXTENSION: {}}))
    assert error.code is ErrorCode.UNSUPPORTED_EXTENSION
    assert error.status == 400
    assert error.details == {"extension": EXTENSION}


def test_a_supported_extension_is_accepted() -> None:
    """wire§3: an extension the authority supports passes step 2."""
    envelope = parse(
        agent_document(extensions={EXTENSION: {"x": 1}}), supported_extensions={EXTENSION}
    )
    assert envelope.extensions == {EXTENSION: {"x": 1}}


@pytest.mark.parametrize("type_", ["mission.explode", "", "membership.grant", "MISSION.CREATE"])
def test_unknown_type_is_unknown_command(type_: str) -> None:
    """wire§3 step 2: a type the authority does not know (staff-only types included here)."""
    error = refused(agent_document(type=type_))
    assert error.code is ErrorCode.UNKNOWN_COMMAND
    assert error.status == 400
    assert error.details == {"type": type_}


def test_unsupported_extension_is_checked_before_the_type() -> None:
    """wire§3 step 2 order: extensions before known type."""
    error = refused(agent_document(type="mission.explode", extensions={"urn:x:y": 1}))
    assert error.code is ErrorCode.UNSUPPORTED_EXTENSION


def test_group_mismatch_is_checked_before_the_type_and_extensions() -> None:
    """wire§3 step 2 order: the path's group (MALFORMED) before extensions and type."""
    error = refused(
        agent_document(group="g-other", type="mission.explode", extensions={"urn:x:y": 1})
    )
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == "$.group"


def test_a_human_envelope_with_a_signature_is_malformed_before_extensions_or_type() -> None:
    """wire§3 step 2 order: a well-formed envelope first."""
    document = human_document(signature="AAAA", type="mission.explode", extensions={"urn:x": 1})
    assert refused(document).code is ErrorCode.MALFORMED


def test_signature_verifies_under_one_of_the_current_keys() -> None:
    """wire§3 step 3: any current key of the actor may have signed."""
    envelope = parse(agent_document())
    check_signature(envelope, [generate_private_key().public_key(), KEY.public_key()])


@pytest.mark.parametrize(
    "changes",
    [
        {"body": {"mission": "m-2", "goal": "g", "budgets": {}}},
        {"membership_epoch": 3},
        {"issued_at": "2026-11-30T10:00:01Z"},
        {"signature": "A" * 86},
    ],
)
def test_any_change_after_signing_breaks_the_signature(changes: dict[str, Any]) -> None:
    """wire§3 step 3: the signature covers the whole canonical envelope without itself."""
    envelope = parse(agent_document(**changes))
    with pytest.raises(ProtocolError) as caught:
        check_signature(envelope, [KEY.public_key()])
    assert caught.value.code is ErrorCode.INVALID_SIGNATURE
    assert caught.value.status == 401


def test_signature_under_no_key_is_invalid() -> None:
    """wire§3 step 3: an agent with no current key cannot sign."""
    with pytest.raises(ProtocolError) as caught:
        check_signature(parse(agent_document()), [])
    assert caught.value.code is ErrorCode.INVALID_SIGNATURE


def test_signing_bytes_exclude_only_the_signature() -> None:
    """wire§3: the signature is over the canonical envelope without 'signature'."""
    document = agent_document()
    assert b'"signature"' not in signing_bytes(document)
    assert b'"issued_at"' in signing_bytes(document)


NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("offset", [0.0, 300.0, -300.0, 299.999999, -299.5])
def test_clock_skew_up_to_300_seconds_either_way_is_accepted(offset: float) -> None:
    """wire§3 step 4: issued_at within ±300 s of the authority clock."""
    check_clock_skew(NOW + timedelta(seconds=offset), NOW)


@pytest.mark.parametrize("offset", [300.000001, -300.000001, 301.0, -301.0, 86400.0])
def test_clock_skew_beyond_300_seconds_is_refused(offset: float) -> None:
    """wire§3 step 4: beyond ±300 s is CLOCK_SKEW (401) with the authority's time."""
    with pytest.raises(ProtocolError) as caught:
        check_clock_skew(NOW + timedelta(seconds=offset), NOW)
    assert caught.value.code is ErrorCode.CLOCK_SKEW
    assert caught.value.status == 401
    assert caught.value.details == {"authority_time": "2026-11-30T10:00:00Z"}


@pytest.mark.parametrize(
    "changes",
    [
        {"signature": "A" * 86},
        {"issued_at": "2026-11-30T10:04:00Z"},
        {"session_epoch": 9},
        {"membership_epoch": 7},
    ],
)
def test_content_digest_ignores_signature_time_and_epochs(changes: dict[str, Any]) -> None:
    """wire§3 step 5: a retry may be re-signed later with new epochs and is the same content."""
    assert parse(agent_document(**changes)).content_digest == parse(agent_document()).content_digest


@pytest.mark.parametrize(
    "changes",
    [
        {"body": {"mission": "m-1", "goal": "other", "budgets": {}}},
        {"id": "cmd-other"},
        {"extensions": {EXTENSION: {}}},
    ],
)
def test_content_digest_covers_body_id_and_extensions(changes: dict[str, Any]) -> None:
    """wire§3 step 5: other content under the same id is a DUPLICATE_COMMAND_ID."""
    base = parse(agent_document(), supported_extensions={EXTENSION})
    other = parse(agent_document(**changes), supported_extensions={EXTENSION})
    assert other.content_digest != base.content_digest


def test_content_digest_ignores_key_order_of_the_body() -> None:
    """wire§1/§3: content is compared on canonical bytes."""
    reordered = {"budgets": {}, "goal": "g", "mission": "m-1"}
    assert (
        parse(agent_document(body=reordered)).content_digest
        == parse(agent_document()).content_digest
    )
