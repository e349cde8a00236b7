"""Schemathesis hooks for ``tests/api/test_schemathesis.py`` (loaded through
``SCHEMATHESIS_HOOKS``): the two rules of the request bodies that JSON Schema cannot state.

wire.md §3 step 2: an envelope's ``group`` is the group of the path (else 400 ``MALFORMED``).
Generated independently, the two never match, and every schema-valid command would be refused
for that before anything else was judged; so each envelope sent to a group's command or batch
endpoint is given the path's group just before it is sent (``before_call`` runs in every
phase).

wire.md §1 (clarified 2026-12-04): an agent's public key is a point of the curve's
prime-order subgroup, which about half of all 32-byte strings are not (400 ``MALFORMED``).
A generated key of the schema's form is replaced by a real one derived from it, so the same
case sends the same key.

Issue 33 §7: three operations do their work only for an organization or a group that exists
(else 404 before the body is judged): ``POST /groups`` and ``POST /agents`` name an
``organization``, ``commands:batch`` writes to the path's group. Generated ids never exist, so
their bodies were never judged; for these three, a generated id of the schema's form is
replaced by the test world's (``MWP_ST_ORGANIZATION``, ``MWP_ST_GROUP``). Everything else stays
as generated.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

import schemathesis

from missionweave.protocol.signing import private_key_from_seed, public_key_text

COMMANDS = "/api/v1/groups/{group}/commands"
BATCH = "/api/v1/groups/{group}/commands:batch"
AGENTS = "/api/v1/agents"
GROUPS = "/api/v1/groups"
#: a key as the schema writes it: 32 bytes in unpadded base64url
_KEY_FORM = re.compile(r"[A-Za-z0-9_-]{43}")
#: an id as the schema writes it (wire.md §1)
_ID_FORM = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _envelopes(path: str, body: Any) -> list[Any]:
    if path == COMMANDS:
        return [body]
    if path == BATCH and isinstance(body, dict) and isinstance(body.get("commands"), list):
        return body["commands"]
    return []


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    path = case.operation.path
    if path == AGENTS and isinstance(case.body, dict):
        _real_key(case.body)
    if path in (AGENTS, GROUPS) and isinstance(case.body, dict):
        _existing(case.body, "organization", os.environ.get("MWP_ST_ORGANIZATION"))
    if path == BATCH and case.path_parameters:
        _existing(case.path_parameters, "group", os.environ.get("MWP_ST_GROUP"))
    group = (case.path_parameters or {}).get("group")
    if not isinstance(group, str):
        return
    for envelope in _envelopes(case.operation.path, case.body):
        if isinstance(envelope, dict) and isinstance(envelope.get("group"), str):
            envelope["group"] = group


def _real_key(body: dict[str, Any]) -> None:
    """``body``'s ``public_key``, when it has the schema's form, made a real key."""
    key = body.get("public_key")
    if isinstance(key, str) and _KEY_FORM.fullmatch(key):
        seed = hashlib.sha256(key.encode()).digest()
        body["public_key"] = public_key_text(private_key_from_seed(seed).public_key())


def _existing(container: dict[str, Any], name: str, existing: str | None) -> None:
    """``container[name]``, when it is an id of the schema's form, made one that exists."""
    value = container.get(name)
    if existing and isinstance(value, str) and _ID_FORM.fullmatch(value):
        container[name] = existing
