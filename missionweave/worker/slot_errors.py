"""The refusals of a slot pool and of its slots (R11.1-11, R11.1-12; MWP-WRK-011).

Why a module of its own: the slot's sandbox (``slot_files``), its grants (``slot_grants``)
and the pool (``slots``) each raise some of them, and a handler in another process gets the
same classes back by name (``isolation_wire.ERRORS``), so they share one base class that none
of those modules owns.
"""

from __future__ import annotations


class SlotError(Exception):
    """The base of every refusal of a slot or of its pool."""


class NoFreeSlot(SlotError):
    """All ``max_concurrency`` slots are busy (R11.1-11)."""


class AlreadyInSlot(SlotError):
    """The WorkItem already runs in another slot: one owner, one slot."""


class IsolationError(SlotError):
    """A path that would leave the slot's directory (R11.1-12)."""


class BudgetExceeded(SlotError):
    """A tool spend past the slot's budget, or on a tool it has no budget for."""


class SlotClosed(SlotError):
    """The slot was released: its context no longer does anything."""
