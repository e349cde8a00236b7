"""What both kinds of handler ``ctx`` share (R11.1-12, R0-08).

A handler gets a ``SlotContext`` (``slots.py``) when it runs in a thread of the worker and a
``ProcessSlotContext`` (``isolation_child.py``) when it runs in a process of its own. Both must
offer the same API, so the part that works the same way in both lives here once: the slot's
identity, its frozen mission context and its file methods.

Nothing here holds a secret. Tokens, budgets, idempotency keys, checkpoints and blocks stay
with each context: the thread's reads its own vault, the child's asks the worker, so the
child process still never holds a real capability token (R0-08). What differs for the file
methods is only how each context checks that the slot is still live (``_live``): the thread's
looks at its own state, the child's asks the worker.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .slot_files import _SlotFiles

if TYPE_CHECKING:
    from .checkpoint_store import Checkpoint
    from .slots import ItemRef


def _freeze(value: Any) -> Any:
    """A deep, read-only copy: mappings become ``MappingProxyType``, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, set | frozenset):
        return frozenset(_freeze(item) for item in value)
    if value is None or isinstance(value, str | int | float | bytes):
        return value
    return copy.deepcopy(value)


class SlotView:
    """The identity and file half of the handler's ``ctx``; subclasses add the rest and
    say, in ``_live``, how they refuse a call once the slot is over."""

    slot_id: str
    item: ItemRef
    mission_context: Mapping[str, Any]
    #: the last checkpoint of this WorkItem when the slot started: continue from it
    resume_from: Checkpoint | None
    _files: _SlotFiles

    def _init_view(
        self,
        *,
        slot_id: str,
        item: ItemRef,
        mission_context: Mapping[str, Any],
        resume_from: Checkpoint | None,
        files: _SlotFiles,
    ) -> None:
        """Set the shared state; the mission context is frozen so that nothing the handler
        holds is shared with another slot or with the caller (R11.1-12)."""
        self.slot_id = slot_id
        self.item = item
        self.mission_context = _freeze(mission_context)
        self.resume_from = resume_from
        self._files = files

    def _live(self) -> None:
        """Raise unless the slot may still be used (``SlotClosed``, ``Preempted``, ...)."""
        raise NotImplementedError

    # identity
    @property
    def group(self) -> str:
        return self.item.group

    @property
    def work_item(self) -> str:
        return self.item.work_item

    @property
    def ownership_epoch(self) -> int:
        return self.item.ownership_epoch

    @property
    def context_packages(self) -> tuple[Mapping[str, Any], ...]:
        """The latest version of each context package of the item's mission, read-only
        (R13.3; ``context_packages``): summaries, never the history."""
        return tuple(self.mission_context.get("context_packages", ()))

    # files: the slot's scratch directory, only once the slot is known to be live
    def read_bytes(self, name: str) -> bytes:
        self._live()
        return self._files.read_bytes(name)

    def write_bytes(self, name: str, data: bytes) -> None:
        self._live()
        self._files.write_bytes(name, data)

    def delete_file(self, name: str) -> None:
        self._live()
        self._files.delete(name)

    def list_files(self) -> list[str]:
        self._live()
        return self._files.names()
