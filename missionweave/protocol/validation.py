"""Small checks for command bodies that name the bad field by JSON path (wire.md §8)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from typing import Any

from .errors import ErrorCode, ProtocolError
from .identifiers import is_id, is_principal

BUDGET_DIMENSIONS = ("money", "tokens", "tool_calls", "compute", "wall_clock", "side_effects")
PRIVATE_REASONING_KEYS = frozenset({"reasoning", "chain_of_thought"})


def malformed(message: str, path: str, requirement: str = "wire§9") -> ProtocolError:
    return ProtocolError(
        ErrorCode.MALFORMED, message, requirement=requirement, details={"path": path}
    )


def check_fields(
    body: dict[str, Any], *, required: Iterable[str], optional: Iterable[str] = (), path: str = "$"
) -> None:
    """Every required field present, no field outside ``required`` and ``optional``."""
    required = tuple(required)
    for name in required:
        if name not in body:
            raise malformed(f"missing field {name!r}", f"{path}.{name}")
    allowed = set(required) | set(optional)
    for name in body:
        if name not in allowed:
            raise malformed(f"unknown field {name!r}", f"{path}.{name}")


def check_id(value: object, path: str) -> str:
    if not is_id(value):
        raise malformed("an id is 1..128 characters of [A-Za-z0-9._:-]", path, "wire§1")
    return value  # type: ignore[return-value]


def check_principal(value: object, path: str) -> str:
    if not is_principal(value):
        raise malformed("a principal is agent:<id> or user:<username>", path, "wire§2")
    return value  # type: ignore[return-value]


#: "not blank" as a JSON Schema ``pattern``: a character outside the whitespace ``str.strip``
#: removes (every ``str.isspace`` character), so the OpenAPI document states exactly what
#: :func:`check_text` refuses. Spelled out, because ``\s`` means another set in ECMA-262 and
#: in Python's ``re``; ECMA-262 and ``re`` read these escapes alike.
NOT_BLANK = r"[^\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def check_text(value: object, path: str, *, max_length: int = 10_000, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise malformed("expected a non-empty string", path)
    if len(value) > max_length:
        raise malformed(f"longer than {max_length} characters", path)
    return value


def check_choice(value: object, choices: Collection[str], path: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise malformed(f"expected one of {sorted(choices)}", path)
    return value


def is_number(value: object) -> bool:
    """A JSON number (a bool is not one, although Python thinks so)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_amounts(value: object, path: str, *, what: str) -> dict[str, float | int]:
    """Non-negative numbers keyed by budget dimension (R10.1-01(g)).

    One check for a mission's ``budgets``, where a dimension left out is unlimited (wire.md
    §10), and a ``usage`` delta, where it counts 0 (wire.md §9), so the two cannot drift
    apart; ``what`` names the field in the refusal.
    """
    if not isinstance(value, dict):
        raise malformed(f"{what} is an object keyed by dimension", path, "R10.1-01")
    for name, amount in value.items():
        if name not in BUDGET_DIMENSIONS:
            raise malformed(f"unknown budget dimension {name!r}", f"{path}.{name}", "R10.1-01")
        if not is_number(amount) or amount < 0:
            raise malformed("expected a non-negative number", f"{path}.{name}", "R10.1-01")
    return value


def find_private_reasoning(value: Any, path: str = "$") -> str | None:
    """The JSON path of the first ``reasoning``/``chain_of_thought`` key (R10.3-12, R13.2-05)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                if key in PRIVATE_REASONING_KEYS:
                    return f"{where}.{key}"
                stack.append((child, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node))
    return None
