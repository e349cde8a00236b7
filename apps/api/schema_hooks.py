"""``GET /schema`` documents the artifact endpoints too (wire.md §4: every endpoint).

``PUT``/``GET``/``HEAD /api/v1/artifacts/{digest}`` are served by a raw ASGI handler mounted
ahead of Django (``apps.artifacts.asgi``: it streams bodies, which a Django view cannot), so
drf-spectacular never sees them; this postprocessing hook adds their description.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from apps.registry.services import MAX_NAME, MAX_VERSION
from missionweave.protocol.commands import PUBLIC_COMMAND_TYPES
from missionweave.protocol.identifiers import ROLES
from missionweave.protocol.offline import EXTENSION as OFFLINE_EXTENSION
from missionweave.protocol.strictjson import CANONICAL_EXPONENT_FROM, MAX_SAFE_INTEGER
from missionweave.protocol.validation import NOT_BLANK

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
                "404": _error("the path's digest is not sha256:<64 lowercase hex>"),
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
    # ids a list is narrowed to (GET …/contexts): an empty or malformed one is refused
    ("query", "mission"): _WIRE_ID,
    ("query", "work_item"): _WIRE_ID,
}


def state_parameter_limits(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Give every path id its pattern and every count its bounds (``PARAMETER_SCHEMAS``)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                stated = PARAMETER_SCHEMAS.get((parameter.get("in"), parameter.get("name")))
                declared = parameter.get("schema", {}).get("type")
                if stated is not None and declared in (None, stated["type"]):
                    # a view's own string cursor named ``after`` keeps its string type
                    parameter["schema"] = {**parameter.get("schema", {}), **stated}
    return result


#: wire.md §2 as ``identifiers.parse_principal`` reads it (the path converter is looser): an
#: agent's id is a wire id, a user's name ``identifiers.USERNAME_PATTERN`` (``\w`` spelled out)
_AGENT = f"agent:{WireIdConverter.regex}"
_USER = r"user:[A-Za-z0-9_.@+-]{1,150}"
_AGENT_ACTOR = f"^{_AGENT}$"
_HUMAN_ACTOR = f"^{_USER}$"
_PRINCIPAL = {"type": "string", "pattern": f"^({_AGENT}|{_USER})$"}
_TIMESTAMP = {
    "type": "string",
    "pattern": r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?Z$",
    "description": "RFC 3339, UTC, ending in Z (wire.md §1)",
}
_EPOCH = {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER}
#: wire.md §1/§2/§3 rules on request fields, by name, stated in the document (issue 16 §6):
#: whatever a client or a fuzzer generates from it passes the shape checks, so what the server
#: then refuses is refused for what it means (a signature, a membership), not for a form the
#: document did not state. Stricter than the server where a rule has no exact JSON Schema
#: form (a day is at most 28 here; the server knows each month's length).
REQUEST_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    **dict.fromkeys(("id", "organization", "group", "agent", "work_item"), _WIRE_ID),
    "principal": _PRINCIPAL,
    "actor": _PRINCIPAL,
    "issued_at": _TIMESTAMP,
    # canonical base64url without padding (``signing.b64url_decode``): the bits past the last
    # byte are zero, so the final character is one of those that carry none
    "public_key": {"type": "string", "pattern": "^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$"},
    "signature": {"type": "string", "pattern": "^[A-Za-z0-9_-]{85}[AQgw]$"},
    "session_epoch": _EPOCH,
    "membership_epoch": _EPOCH,
    "through": _EPOCH,
    "max_concurrency": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER},
    "roles": {
        "type": "array",
        "items": {"type": "string", "enum": list(ROLES)},
        "minItems": 1,
        "uniqueItems": True,
    },
}


def _text(max_length: int) -> dict[str, Any]:
    """A field the server reads with ``validation.check_text``: not blank, bounded."""
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": NOT_BLANK}


#: Text fields of the admin bodies (wire.md §4), by request component: names and versions are
#: not blank (``NOT_BLANK``) and bounded, and a capability's ``id`` is such a text, not one of
#: the client-chosen ids of wire.md §1 that the ``id`` rule above describes. Each replaces
#: whatever the rules by name said.
TEXT_FIELDS: dict[tuple[str, str], dict[str, Any]] = {
    ("OrganizationRequest", "name"): _text(MAX_NAME),
    ("GroupRequestRequest", "name"): _text(MAX_NAME),
    ("AgentCardRequest", "name"): _text(MAX_NAME),
    ("AgentCardRequest", "version"): _text(MAX_VERSION),
    ("CapabilityRequest", "id"): _text(MAX_NAME),
    ("CapabilityRequest", "version"): _text(MAX_VERSION),
}
#: any JSON value the strict parser takes (wire.md §1): integers exactly representable
JSON_VALUE = "JsonValue"
_JSON_VALUE_REF = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
#: wire.md §4: "each item is judged on its own, a refused item does not stop later ones", so
#: an item that is no envelope is refused in its own result, never the whole request; the
#: document says an item is an envelope or any other JSON value, and what happens to the latter
_BATCH_COMMANDS = {
    "type": "array",
    "maxItems": settings.MWP_MAX_BATCH_COMMANDS,
    "items": {"anyOf": [{"$ref": "#/components/schemas/EnvelopeRequest"}, _JSON_VALUE_REF]},
    "description": f"up to {settings.MWP_MAX_BATCH_COMMANDS} envelopes (wire.md §3), each "
    "judged on its own, in order: an item that is not a valid envelope is refused in its own "
    "result (status 400 MALFORMED), and the items after it are judged all the same",
}
#: numbers as ``strictjson`` takes them (wire.md §1): an integer up to 2**53-1 in magnitude,
#: and a double of any magnitude but between 2**53-1 and 1e21, where RFC 8785 would write an
#: integer literal the strict parser refuses; a value the document forbids must be one the
#: server refuses, even in a batch item that is judged on its own
_JSON_VALUE_SCHEMA = {
    "nullable": True,
    "anyOf": [
        {"type": "string"},
        {"type": "boolean"},
        {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
        {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
        {"type": "number", "minimum": CANONICAL_EXPONENT_FROM},
        {"type": "number", "maximum": -CANONICAL_EXPONENT_FROM},
        {"type": "array", "items": _JSON_VALUE_REF},
        {"type": "object", "additionalProperties": _JSON_VALUE_REF},
    ],
}


_AGENT_ONLY = ("session_epoch", "signature")


def _envelope_fields(envelope: dict[str, Any]) -> None:
    """The envelope's ``type`` is one the API takes, ``extensions`` names only supported ones
    (else ``UNKNOWN_COMMAND`` / ``UNSUPPORTED_EXTENSION``, wire.md §3 step 2), and ``body``
    holds JSON the strict parser takes; its fields are judged per type (wire.md §9). Then the
    two kinds (wire.md §3): an agent's command carries ``session_epoch`` and ``signature``, a
    human's neither — ``oneOf`` the two, each closed."""
    properties = envelope["properties"]
    properties["type"] = {"type": "string", "enum": sorted(PUBLIC_COMMAND_TYPES)}
    properties["body"] = {"type": "object", "additionalProperties": _JSON_VALUE_REF}
    properties["extensions"] = {
        "type": "object",
        "properties": {
            OFFLINE_EXTENSION: {"type": "object", "additionalProperties": _JSON_VALUE_REF}
        },
        "additionalProperties": False,
    }
    common = {name: value for name, value in properties.items() if name not in _AGENT_ONLY}
    required = [name for name in envelope["required"] if name not in _AGENT_ONLY]
    agent = {
        "type": "object",
        "title": "an agent's command (signed)",
        "properties": {**properties, "actor": {"type": "string", "pattern": _AGENT_ACTOR}},
        "required": sorted([*required, *_AGENT_ONLY]),
        "additionalProperties": False,
    }
    human = {
        "type": "object",
        "title": "a human's command (its API token authenticates it)",
        "properties": {**common, "actor": {"type": "string", "pattern": _HUMAN_ACTOR}},
        "required": required,
        "additionalProperties": False,
    }
    envelope.clear()
    envelope["oneOf"] = [agent, human]


def closed_request_bodies(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """State every request body as the server parses it (issue 16 §6).

    Every body the server parses refuses a field it does not know with 400 ``MALFORMED``
    "unknown field" (``check_fields``, the envelope parser, the batch and archive checks), so
    each request component (``COMPONENT_SPLIT_REQUEST`` names them ``*Request``) says
    ``additionalProperties: false`` — ``tests/api/test_openapi_truth.py`` sends each one an
    unknown field — and its fields carry the rules of ``REQUEST_FIELD_SCHEMAS`` and
    ``TEXT_FIELDS``. The envelope's ``body`` is left open: its fields depend on the command
    type (wire.md §9); so is a batch's item (``_BATCH_COMMANDS``).
    """
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas[JSON_VALUE] = _JSON_VALUE_SCHEMA
    for name, component in schemas.items():
        if not name.endswith("Request") or component.get("type") != "object":
            continue
        component["additionalProperties"] = False
        for field, stated in REQUEST_FIELD_SCHEMAS.items():
            if field in component.get("properties", {}):
                component["properties"][field] = {
                    **component["properties"][field],
                    **stated,
                }
        for (owner, field), stated in TEXT_FIELDS.items():
            if owner == name:
                component["properties"][field] = dict(stated)
        if name == "EnvelopeRequest":
            _envelope_fields(component)
        if name == "BatchRequestRequest":
            component["properties"]["commands"] = _BATCH_COMMANDS
    return result
