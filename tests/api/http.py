"""HTTP helpers for the REST contract tests: raw JSON requests and the wire.md §8 shape."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.test import APIClient

from apps.ledger.models import GroupLog
from missionweave.protocol.errors import ErrorCode

JSON = "application/json"
API = "/api/v1"


def bearer(token: str | None) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}


def encode(document: object) -> bytes:
    return document if isinstance(document, bytes) else json.dumps(document).encode()


def post(
    api: APIClient, path: str, document: object, token: str | None = None, **extra: Any
) -> Any:
    """POST raw JSON bytes (never re-encoded by the client) to ``/api/v1{path}``."""
    extra.setdefault("content_type", JSON)
    return api.post(API + path, data=encode(document), **bearer(token), **extra)


def submit(api: APIClient, group: str, document: object, token: str | None) -> Any:
    return post(api, f"/groups/{group}/commands", document, token)


def get(api: APIClient, path: str, token: str | None = None, **extra: Any) -> Any:
    return api.get(API + path, **bearer(token), **extra)


def head_sequence(group: str) -> int:
    return GroupLog.objects.get(group_id=group).head_sequence


def error_of(response: Any, status: int, code: str | ErrorCode) -> dict[str, Any]:
    """Assert a wire.md §8 error document with ``status`` and ``code``; return ``error``."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith(JSON)
    body = json.loads(response.content)
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "requirement", "details"}, error
    assert error["code"] == str(code), error
    assert isinstance(error["message"], str)
    assert isinstance(error["requirement"], str)
    assert error["requirement"].startswith(("R", "wire§")), error
    assert isinstance(error["details"], dict)
    return error


def json_of(response: Any, status: int) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return json.loads(response.content)
