"""Fuzzing the command endpoints over HTTP (wire.md §1, §3, §8).

Random bytes, random JSON, valid envelopes with one field mutated, removed or retyped,
bodies with stray fields or wrong types, flipped signatures, huge numbers, deep nesting,
unicode oddities and batches of random items are sent with a valid token. Every answer is a
4xx in the wire.md §8 shape — or a 201 when the mutation happened to leave a valid command,
which is then checked field by field — never a 5xx, and a refused command appends nothing.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from apps.ledger.models import Event
from apps.work.models import Mission
from missionweave.protocol.canonical import canonical_bytes, without
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.signing import verify
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.validation import BUDGET_DIMENSIONS
from tests.factories import AgentPersona, HumanPersona, World, mission_body

from .http import JSON, bearer, head_sequence

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
CODES = {code.value for code in ErrorCode}
ENVELOPE_FIELDS = (
    "id", "type", "group", "actor", "session_epoch", "membership_epoch", "issued_at", "body",
    "extensions", "signature",
)  # fmt: skip
ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# --- strategies --------------------------------------------------------------------------

_ODD_TEXT = st.sampled_from(
    [
        "", " ", "\x00", "\u202e", "\ufeff", "😀", "e\u0301", "\u2028", "a" * 129, "9" * 400,
        "agent:w1", "agent:w2", "user:olga", "user:alice", "agent:", "user:", "authority",
        "g-research", "mission.create", "membership.grant", "1", "true", "null",
        "2026-11-30T10:00:00Z", "sha256:" + "0" * 64, "urn:x:y",
    ]
)  # fmt: skip
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | _ODD_TEXT
)
json_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | _ODD_TEXT, children, max_size=4)
    ),
    max_leaves=12,
)


def _nest(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf] if depth % 2 else {"k": leaf}
    return leaf


deep_values = st.builds(_nest, st.integers(min_value=28, max_value=40), json_values)
odd_values = json_values | deep_values

_RAW_ODDITIES = [
    b"", b" ", b"null", b"{", b"}", b"[", b"{}", b"[]", b'""', b"0", b"-0", b"1e400", b"NaN",
    b"Infinity", b"-Infinity", b'{"id": NaN}', b'{"a": 1, "a": 1}', b"[" * 33 + b"]" * 33,
    b"[" * 5000, b'{"x": 123456789012345678901234567890}', b'"\\ud800"', b'{"\\udc00": 1}',
    b"\xef\xbb\xbf{}", b'"\xff"', b'"\xc0\xaf"', b"{} {}", b"{'a': 1}", b"[1,]", b"/* */ {}",
    b'{"body": {}}\x00',
]  # fmt: skip
raw_bodies = (
    st.binary(max_size=200)
    | st.sampled_from(_RAW_ODDITIES)
    | st.builds(lambda value: json.dumps(value).encode(), odd_values)
)


def dumps(value: Any, ascii_only: bool) -> bytes:
    """JSON bytes of ``value``; a lone surrogate travels as (invalid) UTF-8 bytes."""
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


# --- checks ------------------------------------------------------------------------------


def assert_refused(response: Any) -> None:
    """A 4xx in exactly the wire.md §8 shape with a known code."""
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert_error_document(json.loads(response.content), response.status_code)


def assert_error_document(body: Any, status: int) -> None:
    assert isinstance(body, dict)
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "requirement", "details"}, error
    assert error["code"] in CODES, error
    assert ErrorCode(error["code"]) is not ErrorCode.INTERNAL
    assert isinstance(error["message"], str)
    assert isinstance(error["requirement"], str)
    assert error["requirement"]
    assert isinstance(error["details"], dict)
    assert 400 <= status < 500


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def assert_really_valid(raw: bytes, answer: dict[str, Any], persona: Any, world: World) -> None:
    """An accepted command must have been a valid mission.create of ``persona``, checked here
    without the authority's own parser, and its event must hold exactly the sent body."""
    document = json.loads(raw)
    assert isinstance(document, dict)
    assert set(document) <= set(ENVELOPE_FIELDS)
    assert ID.match(document["id"])
    assert (document["type"], document["group"]) == ("mission.create", world.group)
    assert document["actor"] == persona.principal
    epoch = document["membership_epoch"]
    assert type(epoch) is int
    assert epoch == persona.membership_epochs[world.group]
    assert document.get("extensions", {}) == {}
    issued_at = parse_timestamp(document["issued_at"])
    assert abs(issued_at - datetime.now(UTC)) <= timedelta(seconds=310)
    if isinstance(persona, AgentPersona):
        assert type(document["session_epoch"]) is int
        assert document["session_epoch"] == persona.session_epoch
        message = canonical_bytes(without(document, "signature"))
        assert verify(persona.key.public_key(), message, document["signature"])
    else:
        assert "signature" not in document
        assert "session_epoch" not in document
    body = document["body"]
    assert {"mission", "goal", "budgets"} <= set(body) <= {"mission", "goal", "budgets", "parent"}
    assert ID.match(body["mission"])
    assert isinstance(body["goal"], str)
    assert body["goal"].strip()
    assert isinstance(body["budgets"], dict)
    for name, amount in body["budgets"].items():
        assert name in BUDGET_DIMENSIONS
        assert _is_number(amount)
        assert amount >= 0
    if body.get("parent") is not None:
        assert Mission.objects.filter(group_id=world.group, mission_id=body["parent"]).exists()

    assert answer["command_id"] == document["id"]
    [event_ref] = answer["events"]
    event = Event.objects.get(group_id=world.group, sequence=event_ref["sequence"])
    stored = event.as_wire()
    assert (stored["type"], stored["actor"], stored["command_id"]) == (
        "mission.created",
        persona.principal,
        document["id"],
    )
    assert canonical_bytes(stored["payload"]) == canonical_bytes(body)


def outcome(status: int, content: bytes | dict[str, Any]) -> str:
    """A label for Hypothesis statistics: which refusals (or acceptances) the run reached."""
    body = json.loads(content) if isinstance(content, bytes) else content
    code = body.get("error", {}).get("code", "") if isinstance(body, dict) else ""
    return f"{status} {code}".strip()


def send(api: APIClient, world: World, raw: bytes, token: str) -> Any:
    return api.post(
        f"/api/v1/groups/{world.group}/commands", data=raw, content_type=JSON, **bearer(token)
    )


def judge(api: APIClient, world: World, raw: bytes, persona: Any) -> None:
    """Send ``raw`` with ``persona``'s token; check the answer and what the log did."""
    before = head_sequence(world.group)
    response = send(api, world, raw, persona.token)
    after = head_sequence(world.group)
    event(outcome(response.status_code, response.content))
    if response.status_code == 201:
        answer = json.loads(response.content)
        if response.get("Idempotent-Replayed") == "true":
            assert after == before
        else:
            assert after == before + 1
            assert answer["events"][0]["sequence"] == after
        assert_really_valid(raw, answer, persona, world)
        return
    assert_refused(response)
    assert after == before, "a refused command appended events"


# --- mutations ---------------------------------------------------------------------------

_MUTATIONS = st.sampled_from(["drop", "retype", "extra", "flip_signature", "swap_actor", "none"])


def mutate_envelope(data: st.DataObject, document: dict[str, Any]) -> dict[str, Any]:
    mutation = data.draw(_MUTATIONS, label="mutation")
    document = dict(document)
    if mutation == "drop":
        document.pop(data.draw(st.sampled_from(sorted(document)), label="field"))
    elif mutation == "retype":
        field = data.draw(st.sampled_from(ENVELOPE_FIELDS), label="field")
        document[field] = data.draw(odd_values, label="value")
    elif mutation == "extra":
        name = data.draw(st.text(max_size=12) | _ODD_TEXT, label="name")
        document[name] = data.draw(odd_values, label="value")
    elif mutation == "flip_signature" and isinstance(document.get("signature"), str):
        signature = document["signature"]
        at = data.draw(st.integers(0, len(signature) - 1), label="at")
        char = data.draw(st.sampled_from("AB-_z9="), label="char")
        document["signature"] = signature[:at] + char + signature[at + 1 :]
    elif mutation == "swap_actor":
        document["actor"] = data.draw(_ODD_TEXT, label="actor")
    return document


def mutate_body(data: st.DataObject, body: dict[str, Any]) -> dict[str, Any]:
    body = dict(body)
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        kind = data.draw(st.sampled_from(["drop", "retype", "extra", "budget"]), label="kind")
        if kind == "drop" and body:
            body.pop(data.draw(st.sampled_from(sorted(body)), label="field"))
        elif kind == "retype":
            field = data.draw(st.sampled_from(["mission", "goal", "budgets", "parent"]))
            body[field] = data.draw(odd_values | _ODD_TEXT, label="value")
        elif kind == "extra":
            body[data.draw(st.text(max_size=12) | _ODD_TEXT, label="name")] = data.draw(odd_values)
        else:
            budgets = body.get("budgets") if isinstance(body.get("budgets"), dict) else {}
            name = data.draw(st.sampled_from([*BUDGET_DIMENSIONS, "gold", ""]), label="dim")
            budgets = {**budgets, name: data.draw(_scalars, label="amount")}
            body["budgets"] = budgets
    return body


def command(persona: Any, world: World, body: dict[str, Any]) -> dict[str, Any]:
    """``persona``'s mission.create; unsigned (a dummy signature) when no canonical form exists."""
    try:
        return persona.command(world.group, "mission.create", body)
    except ValueError:  # a huge integer has no canonical form: a client cannot sign it
        document = world.olga.command(world.group, "mission.create", body)
        return {**document, "actor": persona.principal, "session_epoch": 1, "signature": "A" * 86}


def persona_of(data: st.DataObject, world: World) -> AgentPersona | HumanPersona:
    return data.draw(st.sampled_from([world.w1, world.olga]), label="persona")


def resign(persona: Any, document: Any) -> Any:
    """Sign the mutated document again so that the checks after the signature are reached."""
    if isinstance(persona, AgentPersona) and isinstance(document, dict):
        try:
            return signed_envelope(persona.key, document)
        except ValueError:  # no canonical form (a huge integer): a client cannot sign it
            return document
    return document


# --- the fuzz tests ----------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_random_bytes_and_json_are_refused_in_wire_shape(
    api: APIClient, world: World, data: st.DataObject
) -> None:
    """wire§1/§8: random bytes, random JSON and raw oddities never give a 5xx or an append."""
    raw = data.draw(raw_bodies, label="raw")
    judge(api, world, raw, persona_of(data, world))


@FUZZ
@given(data=st.data())
def test_mutated_envelopes_are_refused_or_really_valid(
    api: APIClient, world: World, data: st.DataObject
) -> None:
    """wire§3: one envelope field dropped, retyped, added, or the signature flipped."""
    persona = persona_of(data, world)
    document = mutate_envelope(data, persona.command(world.group, "mission.create", mission_body()))
    if data.draw(st.booleans(), label="resign"):
        document = resign(persona, document)
    judge(api, world, dumps(document, data.draw(st.booleans(), label="ascii")), persona)


@FUZZ
@given(data=st.data())
def test_mutated_bodies_are_refused_or_really_valid(
    api: APIClient, world: World, data: st.DataObject
) -> None:
    """wire§3 step 9: bodies with stray fields, wrong types, huge numbers and deep nesting."""
    persona = persona_of(data, world)
    document = command(persona, world, mutate_body(data, mission_body()))
    judge(api, world, dumps(document, data.draw(st.booleans(), label="ascii")), persona)


_BATCH_ITEM = st.sampled_from(["valid", "envelope", "body", "value", "repeat"])


@settings(FUZZ, max_examples=500)
@given(data=st.data())
def test_batches_of_random_items_are_judged_item_by_item(
    api: APIClient, world: World, data: st.DataObject
) -> None:
    """wire§4: each item of a batch is judged on its own; refused items append nothing."""
    persona = persona_of(data, world)
    items: list[Any] = []
    for _ in range(data.draw(st.integers(0, 4), label="size")):
        kind = data.draw(_BATCH_ITEM, label="item")
        if kind == "repeat" and items:
            items.append(data.draw(st.sampled_from(items), label="again"))
            continue
        document = persona.command(world.group, "mission.create", mission_body())
        if kind == "envelope":
            document = resign(persona, mutate_envelope(data, document))
        elif kind == "body":
            document = command(persona, world, mutate_body(data, mission_body()))
        elif kind == "value":
            document = data.draw(odd_values, label="value")
        items.append(document)
    wrapper = data.draw(st.sampled_from(["commands", "commands", "commands", "other"]))
    raw = dumps({wrapper: items}, data.draw(st.booleans(), label="ascii"))

    before = head_sequence(world.group)
    response = api.post(
        f"/api/v1/groups/{world.group}/commands:batch",
        data=raw,
        content_type=JSON,
        **bearer(persona.token),
    )
    after = head_sequence(world.group)
    if response.status_code != 200:
        event("batch " + outcome(response.status_code, response.content))
        assert_refused(response)
        assert after == before
        return
    results = json.loads(response.content)["results"]
    assert len(results) == len(items)
    new_sequences: set[int] = set()
    for item, result in zip(items, results, strict=True):
        assert set(result) == {"status", "body"}
        event("item " + outcome(result["status"], result["body"]))
        if result["status"] == 201:
            assert_really_valid(json.dumps(item).encode(), result["body"], persona, world)
            new_sequences.update(
                e["sequence"] for e in result["body"]["events"] if e["sequence"] > before
            )
        else:
            assert_error_document(result["body"], result["status"])
    assert sorted(new_sequences) == list(range(before + 1, after + 1))
