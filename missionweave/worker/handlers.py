"""Task handlers: what a Worker runs in a slot, found by the contract's task kind.

A Work Contract (wire.md §10) has no "task type" field; what it asks of a worker is named by
its required ``capabilities``. The **task kind** of a contract is therefore the ``id`` of its
first required capability (``text.summarise``), and the config maps kinds to handlers as
import paths (``"text.summarise" = "package.module:function"``); a ``"*"`` entry catches every
other kind. A contract whose kind has no handler is refused at admission with the reason
``capability`` (R10.3-08): the worker cannot honour it.

A handler is ``handler(ctx, progress) -> TaskResult``:

- ``ctx`` is its slot's ``SlotContext`` (R11.1-12: its own tokens, files, budgets,
  checkpoints and side-effect keys, and ``resume_from`` after a preemption, R11.3-12, or
  after a crash or a reassignment, on any machine, R11.5-01: ``resume.py``), and
  ``ctx.block(required_resolution, state)`` to stop until a person acts (R11.4-04:
  ``blocking.py``);
- ``progress`` is a ``Progress`` of this item only, through which it states its phase,
  milestones (its meaningful checkpoints), estimate and blockers; the runtime decides when
  these become a signed ``work.progress`` (R11.4-03, see ``progress.py``), and what it used
  (``charge``, R11.5-12: ``metering.py``). It holds no reference to the runtime or to another
  slot, so it keeps the slot isolation intact.
- the ``TaskResult`` names the contract's outputs as bytes and the evidence for each
  acceptance criterion (R13.2-02); the runtime uploads the bytes, publishes their manifests
  and submits (``work.submit``) once the handler has returned.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from missionweave.protocol.validation import BUDGET_DIMENSIONS, is_number

from .slots import SlotContext

#: the handler entry that takes every kind no other entry names
ANY_KIND = "*"


@dataclass(frozen=True, slots=True)
class Output:
    """One declared output of the contract (``name``) with its bytes (R13.1-01)."""

    name: str
    data: bytes
    media_type: str | None = None  # the contract's media type when None


@dataclass(frozen=True, slots=True)
class Evidence:
    """The handler's own claim for one acceptance criterion (R13.2-02). ``outputs`` names the
    outputs it refers to; the runtime turns them into artifact digests after the upload.
    ``method`` defaults to the criterion's (R13.2-04)."""

    criterion: str
    verdict: str  # pass, fail or inconclusive
    summary: str
    data: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    method: str | None = None


@dataclass(frozen=True, slots=True)
class TaskResult:
    outputs: tuple[Output, ...]
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True, slots=True)
class ProgressState:
    """What a handler has said about its progress so far (R11.4-01: structured, no
    percentages)."""

    phase: str = "starting"
    milestones: tuple[str, ...] = ()
    next_checkpoint: str | None = None
    blockers: tuple[str, ...] = ()
    finish_at: datetime | None = None
    confidence: float | None = None
    evidence_refs: tuple[str, ...] = ()


class Progress:
    """One item's progress, written by its handler's thread and read by the runtime's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = ProgressState()
        self._online = threading.Event()
        self._online.set()
        self._unbilled: dict[str, float] = {}

    @property
    def state(self) -> ProgressState:
        with self._lock:
            return self._state

    def _change(self, **changes: Any) -> None:
        with self._lock:
            values = {name: getattr(self._state, name) for name in ProgressState.__slots__}
            self._state = ProgressState(**{**values, **changes})

    def phase(self, name: str) -> None:
        self._change(phase=name)

    def milestone(self, name: str, *, next_checkpoint: str | None = None) -> None:
        """A meaningful checkpoint was reached (R11.4-03): reported at once (cadence
        permitting). Call it after ``ctx.checkpoint`` when the checkpoint matters."""
        with self._lock:
            milestones = (*self._state.milestones, name)
        self._change(milestones=milestones, next_checkpoint=next_checkpoint)

    def estimate(self, finish_at: datetime, confidence: float) -> None:
        if not 0 <= confidence <= 1:
            raise ValueError("confidence is from 0 to 1")
        self._change(finish_at=finish_at, confidence=confidence)

    def blocked(self, *blockers: str) -> None:
        """What stops the work now (an empty call clears it); reported at once (R11.4-03)."""
        self._change(blockers=tuple(blockers))

    def charge(self, **amounts: float) -> None:
        """What the work used — ``tokens``, ``money``, ``tool_calls``, ``side_effects`` (the
        runtime meters ``wall_clock`` and ``compute`` itself, ``metering.py``; a handler may
        add to them): the runtime charges it to the item's budgets, and through them the
        mission's, with ``work.usage`` at its next report, before a checkpoint or block
        releases the lease and before the submission; offline, in the binding of what it
        buffers (R10.1-01(g), R11.5-08, R11.5-12). A charge that would pass a limit is refused
        by the authority (R11.5-13): the item then stops at its next checkpoint, blocked for
        its budget (``ctx.should_yield()`` turns true), and is not submitted."""
        for dimension, amount in amounts.items():
            if dimension not in BUDGET_DIMENSIONS:
                raise ValueError(f"{dimension}: not a budget dimension {BUDGET_DIMENSIONS}")
            if not is_number(amount) or amount < 0:
                raise ValueError(f"{dimension}: usage is a non-negative number")
        with self._lock:
            for dimension, amount in amounts.items():
                self._unbilled[dimension] = self._unbilled.get(dimension, 0) + amount

    def _take_charges(self) -> dict[str, float]:
        """The usage not yet charged, handed over once."""
        with self._lock:
            charges, self._unbilled = self._unbilled, {}
        return {dimension: amount for dimension, amount in charges.items() if amount}

    def evidence_ref(self, ref: str) -> None:
        with self._lock:
            refs = (*self._state.evidence_refs, ref)
        self._change(evidence_refs=refs)

    def may_act_externally(self) -> bool:
        """False while the authority is unreachable: the lease and capability token cannot be
        known valid, so no new irreversible or externally visible action (R11.5-05)."""
        return self._online.is_set()

    def _set_online(self, online: bool) -> None:
        if online:
            self._online.set()
        else:
            self._online.clear()


Handler = Callable[[SlotContext, Progress], TaskResult]


class HandlerError(LookupError):
    """A handler entry that cannot be imported or is not callable."""


def kind_of(contract: Mapping[str, Any]) -> str | None:
    """The task kind of a contract: its first required capability's id."""
    capabilities = contract.get("capabilities") or []
    if not capabilities or not isinstance(capabilities[0], Mapping):
        return None
    kind = capabilities[0].get("id")
    return kind if isinstance(kind, str) else None


def import_handler(target: str) -> Handler:
    """``package.module:function`` imported; ``HandlerError`` when it is not there."""
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise HandlerError(f"{target}: cannot import {module_name} ({error})") from None
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise HandlerError(f"{target}: {module_name} has no callable {attribute}")
    return handler


class HandlerTable:
    """Kinds to handlers, every import path resolved at start (a typo fails the start)."""

    def __init__(
        self, handlers: Mapping[str, Handler], targets: Mapping[str, str] | None = None
    ) -> None:
        self._handlers = dict(handlers)
        #: each kind's import path, for a handler run in a process of its own (``isolation``)
        self._targets = dict(targets or {})

    @classmethod
    def from_paths(cls, paths: Mapping[str, str], *, search: Sequence[Path] = ()) -> HandlerTable:
        """Import every handler; ``search`` folders go first on ``sys.path``."""
        for folder in reversed(search):
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        return cls({kind: import_handler(target) for kind, target in paths.items()}, paths)

    def for_contract(self, contract: Mapping[str, Any]) -> Handler | None:
        kind = kind_of(contract)
        found = self._handlers.get(kind) if kind is not None else None
        return found or self._handlers.get(ANY_KIND)

    def target_for(self, contract: Mapping[str, Any]) -> str | None:
        """The import path of ``for_contract``'s handler, when it was configured by one."""
        kind = kind_of(contract)
        return self._targets.get(kind if kind in self._handlers else ANY_KIND)

    def kinds_without_target(self) -> list[str]:
        return sorted(set(self._handlers) - set(self._targets))
