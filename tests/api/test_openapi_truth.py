"""The OpenAPI document states what the server does (issue 16 §6), checked against the server.

``additionalProperties: false`` is said of every request body: for each operation taking one,
a body holding every required field and one field the contract does not know is refused
400 ``MALFORMED``, while the same body without it is not refused for that field. And the
human variant of ``GET /sessions/current`` is in the document, and is what a human gets.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.factories import World

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
