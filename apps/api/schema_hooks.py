"""``GET /schema`` documents the artifact endpoints too (wire.md §4: every endpoint).

``PUT``/``GET``/``HEAD /api/v1/artifacts/{digest}`` are served by a raw ASGI handler mounted
ahead of Django (``apps.artifacts.asgi``: it streams bodies, which a Django view cannot), so
drf-spectacular never sees them; this postprocessing hook adds their description.
"""

from __future__ import annotations

from typing import Any

from .answers import MAX_QUERY_INT
from .converters import DigestConverter, PrincipalConverter, WireIdConverter

ARTIFACT_PATH = "/api/v1/artifacts/{digest}"


def _error(description: str) -> dict[str, Any]:
    return {
        "description": f"{description} (wire.md §8 error)",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _bytes(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }


_DIGEST = {
    "name": "digest",
    "in": "path",
    "required": True,
    "description": "sha256:<64 lowercase hex>",
    "schema": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
}
_STORED = {
    "description": "stored: 201 the first time, 200 after",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"digest": {"type": "string"}, "size": {"type": "integer"}},
                "required": ["digest", "size"],
            }
        }
    },
}
_READ_ERRORS = {
    "401": _error("no or unknown bearer token"),
    "404": _error("not stored, or not readable by the caller: existence is not revealed"),
    "409": _error("ARTIFACT_CORRUPTED: the stored bytes no longer match (R13.1-05)"),
    "416": _error("MALFORMED: the Range cannot be satisfied"),
}


def add_artifact_paths(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Add the artifact endpoints to the generated document."""
    security = [{"bearerToken": []}]
    result.setdefault("paths", {})[ARTIFACT_PATH] = {
        "put": {
            "operationId": "artifacts_put",
            "parameters": [_DIGEST],
            "summary": "Store bytes under their digest (R13.1-01, R13.1-02)",
            "tags": ["artifacts"],
            "security": security,
            "requestBody": {
                "required": True,
                "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
            },
            "responses": {
                "200": _STORED,
                "201": _STORED,
                "401": _error("no or unknown bearer token, before the body is read"),
                "413": _error("TOO_LARGE"),
                "415": _error("no Content-Type"),
                "422": _error("ARTIFACT_HASH_MISMATCH: nothing kept"),
            },
        },
        "get": {
            "operationId": "artifacts_get",
            "parameters": [_DIGEST],
            "summary": "The bytes, verified against the digest before they are sent (R13.1-05)",
            "tags": ["artifacts"],
            "security": security,
            "responses": {
                "200": _bytes("the verified bytes; ETag is the quoted digest"),
                "206": _bytes("one Range of the verified bytes"),
                "304": {"description": "If-None-Match matched the ETag"},
                **_READ_ERRORS,
            },
        },
    }
    return result


#: what the path converters (``apps.api.converters``) and ``answers.query_int`` accept, stated in
#: the document (issue 16 §6), so a client or a fuzzer generated from it asks only for what the
#: server could answer and knows the rest is refused
_WIRE_ID = {"type": "string", "pattern": f"^{WireIdConverter.regex}$", "maxLength": 128}
_COUNT = {"type": "integer", "minimum": 0, "maximum": MAX_QUERY_INT}
PARAMETER_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    **{
        ("path", name): _WIRE_ID
        for name in ("group", "mission", "work_item", "package", "from_group")
    },
    ("path", "principal"): {"type": "string", "pattern": f"^{PrincipalConverter.regex}$"},
    ("path", "digest"): {"type": "string", "pattern": f"^{DigestConverter.regex}$"},
    ("path", "sequence"): _COUNT,
    ("path", "version"): _COUNT,
    ("query", "after"): _COUNT,
    ("query", "limit"): _COUNT,
}


def state_parameter_limits(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Give every path id its pattern and every count its bounds (``PARAMETER_SCHEMAS``)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                stated = PARAMETER_SCHEMAS.get((parameter.get("in"), parameter.get("name")))
                if stated is not None:
                    parameter["schema"] = {**parameter.get("schema", {}), **stated}
    return result
