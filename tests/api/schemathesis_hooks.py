"""Schemathesis hooks for ``tests/api/test_schemathesis.py`` (loaded through
``SCHEMATHESIS_HOOKS``): the one cross-field rule of the request bodies that JSON Schema
cannot state.

wire.md §3 step 2: an envelope's ``group`` is the group of the path (else 400 ``MALFORMED``).
Generated independently, the two never match, and every schema-valid command would be refused
for that before anything else was judged; so each envelope sent to a group's command or batch
endpoint is given the path's group just before it is sent (``before_call`` runs in every
phase). Everything else stays as generated.
"""

from __future__ import annotations

from typing import Any

import schemathesis

COMMANDS = "/api/v1/groups/{group}/commands"
BATCH = "/api/v1/groups/{group}/commands:batch"


def _envelopes(path: str, body: Any) -> list[Any]:
    if path == COMMANDS:
        return [body]
    if path == BATCH and isinstance(body, dict) and isinstance(body.get("commands"), list):
        return body["commands"]
    return []


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    group = (case.path_parameters or {}).get("group")
    if not isinstance(group, str):
        return
    for envelope in _envelopes(case.operation.path, case.body):
        if isinstance(envelope, dict) and isinstance(envelope.get("group"), str):
            envelope["group"] = group
