"""What the HTTP fuzz tests share: odd JSON values and the wire.md §8 checks of a refusal.

``tests/api/test_fuzz.py`` (the envelope and batch surfaces) and
``tests/api/test_fuzz_execution.py`` (leases, capability tokens, budgets, the offline binding)
draw from the same strategies and judge every answer with the same assertions, so a new odd
value or a tighter check reaches both.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from missionweave.protocol import strictjson
from missionweave.protocol.errors import SERVER_FAULTS, ErrorCode, ProtocolError
from tests.factories import AgentPersona, HumanPersona, now_text, unique

CODES = {code.value for code in ErrorCode}

# --- strategies --------------------------------------------------------------------------

ODD_TEXT = st.sampled_from(
    [
        "", " ", "\x00", "\u202e", "\ufeff", "😀", "e\u0301", "\u2028", "a" * 129, "9" * 400,
        "agent:w1", "agent:w2", "user:olga", "user:alice", "agent:", "user:", "authority",
        "g-research", "mission.create", "membership.grant", "1", "true", "null",
        "2026-11-30T10:00:00Z", "sha256:" + "0" * 64, "urn:x:y",
    ]
)  # fmt: skip
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | ODD_TEXT
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | ODD_TEXT, children, max_size=4)
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


def envelope(
    persona: AgentPersona | HumanPersona,
    group: str,
    type_: str,
    body: Any,
    **overrides: Any,
) -> dict[str, Any]:
    """``persona``'s command, signed when it can be; with a dummy signature when the body has
    no canonical form (a huge integer, wire.md §1), which a client cannot sign either."""
    try:
        return persona.command(group, type_, body, **overrides)
    except ValueError:
        assert isinstance(persona, AgentPersona)
        document = {
            "id": overrides.pop("id", None) or unique("cmd"),
            "type": type_,
            "group": group,
            "actor": persona.principal,
            "session_epoch": persona.session_epoch,
            "membership_epoch": persona.membership_epochs.get(group, 1),
            "issued_at": now_text(),
            "body": body,
            **overrides,
        }
        return {**document, "signature": "A" * 86}


def strictly_parses(raw: bytes) -> bool:
    """Whether wire.md §1's strict parser takes ``raw``; what it refuses (U+0000, lone
    surrogates, integral doubles past 2**53, deep nesting…) is tested in
    ``tests/protocol/test_strictjson.py``, so the oracles here start from what it accepts."""
    try:
        strictjson.parse(raw)
    except ProtocolError:
        return False
    return True


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
    assert ErrorCode(error["code"]) not in SERVER_FAULTS
    assert isinstance(error["message"], str)
    assert isinstance(error["requirement"], str)
    assert error["requirement"]
    assert isinstance(error["details"], dict)
    assert 400 <= status < 500


def outcome(status: int, content: bytes | dict[str, Any]) -> str:
    """A label for Hypothesis statistics: which refusals (or acceptances) the run reached."""
    body = json.loads(content) if isinstance(content, bytes) else content
    code = body.get("error", {}).get("code", "") if isinstance(body, dict) else ""
    return f"{status} {code}".strip()
