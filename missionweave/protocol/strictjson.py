"""Strict JSON parsing (wire.md §1): every request body goes through here first.

Refused before anything else looks at the input: invalid UTF-8, duplicate keys, ``NaN`` and
``Infinity``, numbers outside the IEEE-754 double range, integers JCS cannot represent
exactly, lone surrogates, U+0000 in any string (no PostgreSQL text or jsonb column can store
it), nesting deeper than 32 and bodies over the size limit. Whatever
passes can be canonicalised (RFC 8785), so hashing and signing never fail later.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .canonical import canonical_bytes
from .errors import ErrorCode, ProtocolError

MAX_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1
#: from here on RFC 8785 writes numbers with an exponent (1e+21), which parse back as doubles
CANONICAL_EXPONENT_FROM = 1e21
#: a surrogate can only arrive escaped (UTF-8 cannot encode one): the only input the hooks
#: above let through that RFC 8785 cannot canonicalise is a lone one of these
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _malformed(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.MALFORMED, message, requirement="wire§1")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _malformed(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> None:
    raise _malformed(f"{name} is not JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _malformed(f"number {text[:40]} is outside the IEEE-754 double range")
    # RFC 8785 writes such a double as an integer literal beyond 2**53-1 (9007199254740992.0
    # becomes 9007199254740992), which this parser, and rfc8785 libraries, refuse: accepting
    # it would put events into the log that a verifier cannot re-canonicalise.
    if MAX_SAFE_INTEGER < abs(value) < CANONICAL_EXPONENT_FROM:
        raise _malformed(f"number {text[:40]} is an integer beyond 2**53-1")
    return value


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > 16:
        raise _malformed(f"integer {text[:40]}… is not exactly representable")
    value = int(text)
    if abs(value) > MAX_SAFE_INTEGER:
        raise _malformed(f"integer {text} is not exactly representable (beyond 2**53-1)")
    return value


def nesting_depth(value: Any) -> int:
    """Depth of containers in ``value`` (a scalar is 0, ``[]`` is 1), computed without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            depth += 1
            stack.extend((child, depth) for child in node.values())
        elif isinstance(node, list):
            depth += 1
            stack.extend((child, depth) for child in node)
        deepest = max(deepest, depth)
    return deepest


def _contains_nul(value: Any) -> bool:
    """True when any key or string in ``value`` holds U+0000 (walked without recursion)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def parse(data: bytes | str, *, max_bytes: int | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``data`` strictly or raise ``ProtocolError`` (``MALFORMED`` or ``TOO_LARGE``)."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError:
            raise _malformed("text is not valid UTF-8") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise ProtocolError(
            ErrorCode.TOO_LARGE,
            f"body of {len(data)} bytes exceeds the limit of {max_bytes}",
            requirement="wire§1",
            details={"limit": max_bytes},
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("body is not valid UTF-8") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except ProtocolError:
        raise
    except RecursionError:
        raise _malformed(f"nesting deeper than {max_depth}") from None
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise _malformed(f"not JSON: {exc}") from None
    if nesting_depth(value) > max_depth:
        raise _malformed(f"nesting deeper than {max_depth}")
    # U+0000 can only arrive as the escape \u0000: searching the text first keeps the walk rare.
    if "\\u0000" in text and _contains_nul(value):
        raise _malformed("strings may not contain U+0000 (PostgreSQL text cannot hold it)")
    # Canonicalising is the check for lone surrogates; without a surrogate escape in the text
    # there is nothing left it could refuse, and skipping it halves the cost of a parse.
    if _SURROGATE_ESCAPE.search(text):
        try:
            canonical_bytes(value)
        except (ValueError, UnicodeError) as exc:
            raise _malformed(f"not canonicalisable JSON: {exc}") from None
    return value
