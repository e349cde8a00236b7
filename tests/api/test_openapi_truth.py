"""The OpenAPI document states what the server does (issue 16 §6), checked against the server.

``additionalProperties: false`` is said of every request body: for each operation taking one,
a body holding every required field and one field the contract does not know is refused
400 ``MALFORMED``, while the same body without it is not refused for that field. And the
human variant of ``GET /sessions/current`` is in the document, and is what a human gets.

Issue 33 §7, three disagreements Schemathesis found, each held here: a name or version of the
admin bodies (``POST /groups`` ``name``, ``POST /agents`` ``capabilities[].version`` and their
kin) is refused exactly when the document forbids it (blank by any whitespace, or too long; a
capability id is text, not a wire id), and a batch item that is no envelope is refused in its
own result, which the document allows, while a value the document forbids in an item refuses
the whole request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from missionweave.protocol.signing import generate_private_key, public_key_text
from missionweave.protocol.strictjson import MAX_SAFE_INTEGER
from tests.factories import World, agent_card, mission_body, unique

from .http import error_of, json_of, post

UNKNOWN = "zz_not_in_the_contract"
#: every endpoint that takes a JSON body (the snapshot's ``{}`` has no fields to document)
JSON_BODIES = (
    "agents",
    "capabilities:check",
    "groups",
    "groups/{group}/archive",
    "groups/{group}/commands",
    "groups/{group}/commands:batch",
    "groups/{group}/memberships",
    "organizations",
    "presence",
    "sessions",
)
PLACEHOLDERS: dict[str, Any] = {
    "string": "x-1",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


def _document(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/v1/schema")
    assert response.status_code == 200
    return json.loads(response.content)


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _closed_bodies(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, body schema) of every operation whose JSON body is closed."""
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            schema = _resolve(document, content["application/json"]["schema"])
            # a oneOf of kinds (the envelope: an agent's, a human's) is closed when each is;
            # the test sends the first kind
            kinds = [_resolve(document, kind) for kind in schema.get("oneOf", [schema])]
            if all(kind.get("additionalProperties") is False for kind in kinds):
                found.append((method, path, kinds[0]))
    return found


def _filled(path: str, world: World) -> str:
    return (
        path.replace("{group}", world.group)
        .replace("{principal}", "agent:w1")
        .replace("{mission}", "m-1")
    )


def _minimal(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Every required field of ``schema`` with a placeholder of its type."""
    body = {}
    for name in schema.get("required", []):
        field = _resolve(document, schema["properties"][name])
        body[name] = PLACEHOLDERS[field.get("type", "object")]
    return body


def test_every_request_body_is_closed_in_the_document(api: APIClient, db: None) -> None:
    """Issue 16 §6: no request component is left open (the hook covers them all)."""
    document = _document(api)
    requests = {
        name: schema
        for name, schema in document["components"]["schemas"].items()
        if name.endswith("Request") and (schema.get("type") == "object" or "oneOf" in schema)
    }
    assert requests
    open_ones = {
        n
        for n, schema in requests.items()
        if any(
            kind.get("additionalProperties") is not False for kind in schema.get("oneOf", [schema])
        )
    }
    assert open_ones == set()
    assert {f"{method.upper()} {path}" for method, path, _ in _closed_bodies(document)} == {
        f"POST /api/v1/{path}" for path in JSON_BODIES
    }


def test_a_field_the_contract_does_not_know_is_refused_on_every_closed_body(
    api: APIClient, world: World
) -> None:
    """Issue 16 §6, wire.md §1: what the document closes, the server refuses."""
    document = _document(api)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {world.alice.token}")
    checked = []
    for method, path, schema in _closed_bodies(document):
        url = _filled(path, world)
        body = _minimal(document, schema)
        send = getattr(api, method)
        with_unknown = send(url, {**body, UNKNOWN: 1}, format="json")
        assert with_unknown.status_code == 400, (method, path, with_unknown.content[:300])
        error = json.loads(with_unknown.content)["error"]
        assert error["code"] == "MALFORMED", (method, path, error)
        without = send(url, body, format="json")
        assert UNKNOWN not in without.content.decode(), (method, path)
        assert without.content != with_unknown.content, (method, path, error)
        checked.append(f"{method.upper()} {path}")
    assert len(checked) == len(JSON_BODIES), checked


@pytest.mark.parametrize("who", ["agent", "human"])
def test_sessions_current_answers_the_variant_the_document_states(
    api: APIClient, world: World, who: str
) -> None:
    """wire.md §4: an agent gets its session, a human ``{"principal", "memberships"}`` — the
    two ``oneOf`` branches of ``CurrentSession``, each answer holding its branch's fields."""
    document = _document(api)
    answer = document["paths"]["/api/v1/sessions/current"]["get"]["responses"]["200"]
    variants = _resolve(document, answer["content"]["application/json"]["schema"])["oneOf"]
    required = {
        ref["$ref"].rsplit("/", 1)[1]: set(_resolve(document, ref)["required"]) for ref in variants
    }
    assert required == {
        "Session": {"session_id", "session_epoch", "token", "expires_at", "memberships"},
        "HumanSession": {"principal", "memberships"},
    }
    token = world.w1.token if who == "agent" else world.alice.token
    response = api.get("/api/v1/sessions/current", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    fields = set(json.loads(response.content))
    expected = required["Session" if who == "agent" else "HumanSession"]
    assert fields == expected


# --- issue 33 §7: text fields and batch items ---------------------------------------------

#: values at the edges of "not blank, bounded": each kind of whitespace alone, text around
#: it, characters that look blank but are not whitespace, and lengths at and past each limit
TEXT_PROBES = (
    "a", " a ", "v1 ", "text summarise", " ", "\t", "\n", "\u000b", "\u001f", "\u0085",
    "\u00a0", "\u2007", "\u2028", "\u3000", " \u00a0\u3000 ", "\u200b", "\ufeff",
    "x" * 64, "x" * 65, "x" * 200, "x" * 201,
)  # fmt: skip


def _group_body(world: World, value: str) -> dict[str, Any]:
    return {"id": unique("g"), "organization": world.org, "name": value}


def _organization_body(world: World, value: str) -> dict[str, Any]:
    return {"id": unique("org"), "name": value}


def _agent_body(world: World, card: dict[str, Any]) -> dict[str, Any]:
    key = public_key_text(generate_private_key().public_key())
    return {"id": unique("a"), "organization": world.org, "public_key": key, "agent_card": card}


def _card_with(field: str, value: str) -> dict[str, Any]:
    return {**agent_card(), field: value}


def _capability_with(field: str, value: str) -> dict[str, Any]:
    card = agent_card()
    card["capabilities"] = [{**card["capabilities"][0], field: value}]
    return card


#: (path, the field's steps in the request body schema, where a refusal names it, the body)
TEXT_FIELDS = {
    "groups-name": ("/groups", ("name",), "$.name", _group_body),
    "organizations-name": ("/organizations", ("name",), "$.name", _organization_body),
    "agents-card-name": (
        "/agents",
        ("agent_card", "name"),
        "$.agent_card.name",
        lambda world, value: _agent_body(world, _card_with("name", value)),
    ),
    "agents-card-version": (
        "/agents",
        ("agent_card", "version"),
        "$.agent_card.version",
        lambda world, value: _agent_body(world, _card_with("version", value)),
    ),
    "agents-capability-id": (
        "/agents",
        ("agent_card", "capabilities", "items", "id"),
        "$.agent_card.capabilities[0].id",
        lambda world, value: _agent_body(world, _capability_with("id", value)),
    ),
    "agents-capability-version": (
        "/agents",
        ("agent_card", "capabilities", "items", "version"),
        "$.agent_card.capabilities[0].version",
        lambda world, value: _agent_body(world, _capability_with("version", value)),
    ),
}


def _field_schema(document: dict[str, Any], path: str, steps: tuple[str, ...]) -> dict[str, Any]:
    """The schema the document gives the field at ``steps`` of ``POST path``'s body."""
    operation = document["paths"][f"/api/v1{path}"]["post"]
    schema = _resolve(document, operation["requestBody"]["content"]["application/json"]["schema"])
    for step in steps:
        schema = _resolve(
            document, schema["items"] if step == "items" else schema["properties"][step]
        )
    return schema


@pytest.mark.parametrize("field", sorted(TEXT_FIELDS))
def test_a_text_field_is_refused_exactly_where_the_document_forbids_it(
    api: APIClient, world: World, field: str
) -> None:
    """Issue 33 §7 (``POST /groups`` ``name``, ``POST /agents`` ``capabilities[].version``):
    for every probe, the server refuses the field (400 MALFORMED at its path) if and only if
    the document's schema for it rejects the value."""
    path, steps, where, body_of = TEXT_FIELDS[field]
    documented = Draft202012Validator(_field_schema(_document(api), path, steps))
    disagreements = []
    for value in TEXT_PROBES:
        response = post(api, path, body_of(world, value), world.alice.token)
        refused = response.status_code == 400 and (
            json.loads(response.content)["error"]["details"].get("path") == where
        )
        if refused:
            error_of(response, 400, "MALFORMED")
        else:
            assert response.status_code == 201, (value, response.content[:300])
        if refused == documented.is_valid(value):
            disagreements.append((value, "refused" if refused else "accepted"))
    assert disagreements == []


def _documented(document: dict[str, Any], component: str, value: object) -> bool:
    """Whether ``value`` is valid against the document's component (references resolved
    inside the document)."""
    schema = {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    return Draft202012Validator(schema).is_valid(value)


def test_a_batch_item_that_is_no_envelope_is_refused_alone_as_the_document_allows(
    api: APIClient, world: World
) -> None:
    """Issue 33 §7, wire.md §4 ("each item is judged on its own, a refused item does not stop
    later ones"): items that are no envelope (an unknown field, a number, a double beyond
    1e21) are refused each in its own result and the envelopes around them are appended; the
    document allows the body. A value the document forbids in an item (an integer beyond
    2**53-1, which the strict parser refuses) refuses the whole request."""
    document = _document(api)
    first = world.olga.command(world.group, "mission.create", mission_body())
    unknown = {**world.olga.command(world.group, "mission.create", mission_body()), UNKNOWN: 1}
    last = world.olga.command(world.group, "mission.create", mission_body())
    body = {"commands": [first, unknown, 42, 1e300, last]}
    assert _documented(document, "BatchRequestRequest", body)
    answer = json_of(
        post(api, f"/groups/{world.group}/commands:batch", body, world.olga.token), 200
    )
    assert [item["status"] for item in answer["results"]] == [201, 400, 400, 400, 201]
    assert answer["results"][1]["body"]["error"]["details"]["path"] == f"$.{UNKNOWN}"

    too_exact = {"commands": [MAX_SAFE_INTEGER + 1]}
    assert not _documented(document, "BatchRequestRequest", too_exact)
    refused = post(api, f"/groups/{world.group}/commands:batch", too_exact, world.olga.token)
    error_of(refused, 400, "MALFORMED")
