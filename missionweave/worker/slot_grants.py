"""What one slot is granted: its capability tokens and its tool budgets (R11.1-12, R11.3-06,
R11.3-07; MWP-WRK-011).

Why: each active slot's credentials and budgets are its own (R11.1-12), and the runtime, not
the handler's good manners, keeps them so. Each object here is owned by exactly one slot.

- **Credentials**: ``SlotContext.tokens()`` returns a fresh copy of this slot's tokens only;
  the slot keeps them in ``bytearray``s that release overwrites with zeros, and a renewal
  rotates or narrows one in place under the live lease (R11.3-07).
- **Tool budgets**: spending past a limit, or on a tool with no budget, is refused whole.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping

from .slot_errors import BudgetExceeded


class _TokenVault:
    """This slot's capability tokens; ``wipe`` zeroes the bytes it holds (R11.1-12).

    Python cannot zero the ``str`` copies it hands out; those die with the handler's frames.
    """

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, bytearray] = {}
        for name, token in tokens.items():
            self.put(name, token)

    def put(self, name: str, token: str) -> None:
        if not isinstance(name, str) or not name or not isinstance(token, str) or not token:
            raise ValueError("a token is a non-empty string under a non-empty name")
        with self._lock:
            old = self._tokens.get(name)
            if old is not None:
                old[:] = bytes(len(old))
            self._tokens[name] = bytearray(token.encode())

    def copy(self) -> dict[str, str]:
        with self._lock:
            return {name: bytes(raw).decode() for name, raw in self._tokens.items()}

    def wipe(self) -> None:
        with self._lock:
            for raw in self._tokens.values():
                raw[:] = bytes(len(raw))
            self._tokens.clear()


class ToolBudget:
    """Per-tool spending limits of one slot. A spend is all or nothing."""

    def __init__(self, limits: Mapping[str, int | float]) -> None:
        self._lock = threading.Lock()
        self._limits: dict[str, float] = {}
        for tool, limit in limits.items():
            if not isinstance(tool, str) or not tool or not _is_amount(limit, zero=True):
                raise ValueError("a tool budget is a non-negative finite number per named tool")
            self._limits[tool] = float(limit)
        self._spent = dict.fromkeys(self._limits, 0.0)

    def spend(self, tool: str, amount: int | float = 1) -> float:
        """Charge ``amount`` to ``tool``; the remaining budget, or ``BudgetExceeded``."""
        if not _is_amount(amount, zero=False):
            raise ValueError("an amount is a positive finite number")
        with self._lock:
            if tool not in self._limits:
                raise BudgetExceeded(f"no budget for tool {tool!r} in this slot")
            after = self._spent[tool] + amount
            if after > self._limits[tool]:
                raise BudgetExceeded(
                    f"{tool!r}: spending {amount} would exceed the limit "
                    f"{self._limits[tool]} (spent {self._spent[tool]})"
                )
            self._spent[tool] = after
            return self._limits[tool] - after

    def remaining(self, tool: str) -> float:
        with self._lock:
            if tool not in self._limits:
                return 0.0
            return self._limits[tool] - self._spent[tool]


def _is_amount(value: object, *, zero: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    return value >= 0 if zero else value > 0
