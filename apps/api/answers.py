"""What the hot endpoints answer, shared by their DRF views and the edge (``edge``).

``POST /groups/{group}/commands``, ``commands:batch`` and ``GET /groups/{group}/events`` are
answered ahead of Django by :mod:`apps.api.edge` when the app is served over ASGI, and by the
DRF views in :mod:`apps.api.views.groups` otherwise (Django's test client, the OpenAPI
document). Both call these functions, so the two doors cannot answer differently.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from apps.ledger import selectors
from apps.ledger.selectors import EventPage, spliced
from apps.ledger.write_path import Caller, Outcome, submit_batch
from missionweave.protocol.errors import ErrorCode, ProtocolError

#: the longest count a query or a path may carry: 18 digits always fit PostgreSQL's bigint
MAX_COUNT_DIGITS = 18
MAX_QUERY_INT = 10**MAX_COUNT_DIGITS - 1


def query_int(raw: str | None, name: str, default: int) -> int:
    """A non-negative integer query parameter (wire.md §4): ASCII digits only, at most 18 of
    them; ``default`` when absent. ``str.isdigit`` alone takes fullwidth and other digits."""
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_COUNT_DIGITS:
        raise ProtocolError(
            ErrorCode.MALFORMED,
            f"{name} is a non-negative integer",
            requirement="wire§4",
            details={"parameter": name},
        )
    return int(raw)


def events_body(page: EventPage) -> bytes:
    """``{"events": [...], "head", "next_after"}``: the stored documents are already JSON,
    spliced instead of decoded and encoded again."""
    suffix = f'],"head":{page.head},"next_after":{page.next_after}}}'
    return spliced('{"events":[', page.documents, suffix).encode()


def outcome_headers(outcome: Outcome) -> dict[str, str]:
    """The headers an answered command adds (wire.md §3: a replay says so)."""
    return {"Idempotent-Replayed": "true"} if outcome.replayed else {}


def batch_document(group: str, data: Any, caller: Caller) -> dict[str, Any]:
    """The answer to ``commands:batch``: each item judged on its own, in order (wire.md §4)."""
    if (
        not isinstance(data, dict)
        or set(data) != {"commands"}
        or not isinstance(data["commands"], list)
    ):
        raise ProtocolError(
            ErrorCode.MALFORMED,
            'a batch is {"commands": [envelope, ...]}',
            requirement="wire§4",
            details={"path": "$.commands"},
        )
    commands = data["commands"]
    if len(commands) > settings.MWP_MAX_BATCH_COMMANDS:
        raise ProtocolError(
            ErrorCode.TOO_LARGE,
            f"a batch holds at most {settings.MWP_MAX_BATCH_COMMANDS} commands",
            requirement="wire§1",
            details={"limit": settings.MWP_MAX_BATCH_COMMANDS},
        )
    selectors.group_log(group)
    results = submit_batch(group_id=group, documents=commands, caller=caller)
    return {
        "results": [
            {"status": item.status, "body": item.as_body()}
            if isinstance(item, ProtocolError)
            else {"status": item.status, "body": item.body}
            for item in results
        ]
    }
