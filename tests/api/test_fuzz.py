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
from missionweave.protocol.signing import verify
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.validation import BUDGET_DIMENSIONS
from tests.factories import AgentPersona, HumanPersona, World, mission_body

from .fuzzing import (
    ODD_TEXT,
    assert_error_document,
    assert_refused,
    dumps,
    envelope,
    odd_values,
    outcome,
    raw_bodies,
    scalars,
)
from .http import JSON, bearer, head_sequence

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ENVELOPE_FIELDS = (
    "id", "type", "group", "actor", "session_epoch", "membership_epoch", "issued_at", "body",
    "extensions", "signature",
)  # fmt: skip
ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}\Z")  # \Z: "$" would let a trailing newline in

# --- checks ------------------------------------------------------------------------------


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
        name = data.draw(st.text(max_size=12) | ODD_TEXT, label="name")
        document[name] = data.draw(odd_values, label="value")
    elif mutation == "flip_signature" and isinstance(document.get("signature"), str):
        signature = document["signature"]
        at = data.draw(st.integers(0, len(signature) - 1), label="at")
        char = data.draw(st.sampled_from("AB-_z9="), label="char")
        document["signature"] = signature[:at] + char + signature[at + 1 :]
    elif mutation == "swap_actor":
        document["actor"] = data.draw(ODD_TEXT, label="actor")
    return document


def mutate_body(data: st.DataObject, body: dict[str, Any]) -> dict[str, Any]:
    body = dict(body)
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        kind = data.draw(st.sampled_from(["drop", "retype", "extra", "budget"]), label="kind")
        if kind == "drop" and body:
            body.pop(data.draw(st.sampled_from(sorted(body)), label="field"))
        elif kind == "retype":
            field = data.draw(st.sampled_from(["mission", "goal", "budgets", "parent"]))
            body[field] = data.draw(odd_values | ODD_TEXT, label="value")
        elif kind == "extra":
            body[data.draw(st.text(max_size=12) | ODD_TEXT, label="name")] = data.draw(odd_values)
        else:
            budgets = body.get("budgets") if isinstance(body.get("budgets"), dict) else {}
            name = data.draw(st.sampled_from([*BUDGET_DIMENSIONS, "gold", ""]), label="dim")
            budgets = {**budgets, name: data.draw(scalars, label="amount")}
            body["budgets"] = budgets
    return body


def command(persona: Any, world: World, body: dict[str, Any]) -> dict[str, Any]:
    """``persona``'s mission.create; unsigned (a dummy signature) when no canonical form exists."""
    return envelope(persona, world.group, "mission.create", body)


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
