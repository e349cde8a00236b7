"""Isolated execution slots (R11.1-04, R11.1-11, R11.1-12, R0-08; MWP-WRK-011).

A Worker runs at most its Agent Card's ``max_concurrency`` WorkItems at once (R11.1-11), each
in a slot. Each active slot isolates its mission context, its credentials (capability tokens),
its checkpoints, its tool budgets and its side-effect keys from every other slot (R11.1-12).
The runtime enforces that, not the handler's good manners: a handler receives one
``SlotContext`` and does everything through it.

This module is the handler's view (``SlotContext``) and the runtime's (``Slot``, ``SlotPool``:
acquire, run, release); each kind of slot state has a module of its own:

- **Mission context**: a frozen deep copy (read-only mappings and tuples), so nothing a
  handler holds is shared with another slot or with the caller's ``Assignment``
  (``slot_view.py``, with the identity and file methods both kinds of ``ctx`` share).
- **Credentials** and **tool budgets**: ``slot_grants.py`` (tokens wiped on release, spends
  refused whole).
- **Files**: ``slot_files.py``, the slot's scratch directory, reachable only from inside.
- **Checkpoints** and **kept results**: ``checkpoint_store.py``, durable and outliving the
  slot, never reachable through the file methods.
- **Side-effect keys**: ``idempotency_key(effect)`` is R16-12's key over the Group-qualified
  mission, the WorkItem, the ownership epoch and the effect name. The pool never lets two
  slots hold the same (Group, WorkItem), so two active slots cannot derive the same key;
  the slot id is deliberately *not* in it, because R16-12 and R11.4-09 require the same key
  when the same owner retries the same effect after a checkpoint in a new slot, which is
  exactly the duplicate the external system must recognise.

The refusals are in ``slot_errors.py``. Every name other modules import from here
(``Checkpoint``, ``CheckpointStore``, ``BudgetExceeded``, ...) is still importable from here.

Threads, not processes, and the limit that comes with it: handlers are mostly waiting on
tools and the network, and a thread shares the runtime's signing client without pickling
tokens across a pipe. The isolation above is enforced by the context API, by having no
reference from one slot's context to anything of another slot (tested by walking the object
graph), and by file modes against other users. It is *not* a sandbox against hostile code:
a handler running in this process can still call ``open()`` on another slot's directory
(same uid). A worker that must run untrusted handlers sets ``isolation = "process"``: the
slot's thread then serves a child process that runs the handler under a uid of its own
(``isolation.py``); this module is unchanged by it.

A thread cannot be killed, which is what R11.3-12 wants: control leaves a handler only by
its return, its exception, ``Preempted`` raised at a checkpoint (see ``preemption.py``), or
``Blocked`` raised by ``ctx.block`` or at the checkpoint a requested block stops at (see
``blocking.py``, R11.4-04).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

from missionweave.protocol.canonical import digest
from missionweave.protocol.idempotency import external_operation_key

from .blocking import Block, Blocked, check_resolution
from .checkpoint_store import (
    CHECKPOINT_FORMAT,
    Checkpoint,
    CheckpointStore,
    ResultFiles,
)
from .preemption import Phase, Preempted, Preemption, Step, complete_preemption
from .slot_errors import (
    AlreadyInSlot,
    BudgetExceeded,
    IsolationError,
    NoFreeSlot,
    SlotClosed,
    SlotError,
)
from .slot_files import _SlotFiles
from .slot_grants import ToolBudget, _TokenVault
from .slot_view import SlotView

#: this module's public names, with those other modules import from here though they now
#: live in the modules above (so no importer had to change)
__all__ = [
    "CHECKPOINT_FORMAT",
    "AlreadyInSlot",
    "Assignment",
    "BudgetExceeded",
    "Checkpoint",
    "CheckpointStore",
    "IsolationError",
    "ItemRef",
    "NoFreeSlot",
    "OnBlock",
    "OnCheckpoint",
    "OnDone",
    "Outcome",
    "Requeue",
    "ResultFiles",
    "Slot",
    "SlotClosed",
    "SlotContext",
    "SlotError",
    "SlotPool",
    "ToolBudget",
]


# --- what a slot runs -----------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRef:
    """The WorkItem a slot runs, without anything secret: what the runtime's callbacks get."""

    group: str
    mission: str
    work_item: str
    ownership_epoch: int
    lease_id: str


@dataclass(frozen=True)
class Assignment:
    """What the runtime hands the pool to start an item: the lease's identity, the mission
    context the handler may read, its capability tokens (name -> token, R11.3-06) and its tool
    budgets (tool -> limit). The pool copies everything it keeps; the runtime should drop
    this object once the slot has started, since it still holds the tokens."""

    group: str
    mission: str
    work_item: str
    ownership_epoch: int
    lease_id: str
    context: Mapping[str, Any] = field(default_factory=dict)
    tokens: Mapping[str, str] = field(default_factory=dict)
    budgets: Mapping[str, int | float] = field(default_factory=dict)
    #: where the runtime decided the item resumes (``resume.restore``: possibly the
    #: authority's checkpoint, R11.5-01); ``None``: this pool's latest checkpoint of the item
    resume_from: Checkpoint | None = None

    @property
    def item(self) -> ItemRef:
        return ItemRef(
            self.group, self.mission, self.work_item, self.ownership_epoch, self.lease_id
        )


@dataclass(frozen=True)
class Outcome:
    """How a slot's run ended. ``preempted`` means all five steps of R0-13 were taken;
    ``blocked`` that the block was recorded before the slot was released (R11.4-04), with its
    ``resolution`` and its ``checkpoint`` (None: the item had none, it starts over)."""

    kind: Literal["finished", "failed", "preempted", "blocked"]
    result: Any = None
    error: BaseException | None = None
    checkpoint: Checkpoint | None = None
    resolution: str | None = None


# --- the handler's view ----------------------------------------------------------------------


class SlotContext(SlotView):
    """Everything a task handler may touch while it runs in one slot (R11.1-12).

    It refers only to objects owned by this slot: no pool, no other slot, no runtime
    callback. After a preemption checkpoint every call raises ``Preempted`` again; after
    release every call raises ``SlotClosed``.
    """

    def __init__(
        self,
        *,
        slot_id: str,
        item: ItemRef,
        mission_context: Mapping[str, Any],
        vault: _TokenVault,
        budget: ToolBudget,
        files: _SlotFiles,
        checkpoints: CheckpointStore,
        preemption: Preemption,
        resume_from: Checkpoint | None,
        block: Block | None = None,
    ) -> None:
        self._init_view(
            slot_id=slot_id,
            item=item,
            mission_context=mission_context,
            resume_from=resume_from,
            files=files,
        )
        self._vault = vault
        self._budget = budget
        self._checkpoints = checkpoints
        self._preemption = preemption
        self._block = block or Block()
        self._closed = False

    # credentials, budgets, side-effect keys
    def tokens(self) -> dict[str, str]:
        """A copy of this slot's capability tokens (and of nobody else's)."""
        self._live()
        return self._vault.copy()

    def spend(self, tool: str, amount: int | float = 1) -> float:
        """Charge the slot's budget for ``tool`` before using it; ``BudgetExceeded`` refuses."""
        self._live()
        return self._budget.spend(tool, amount)

    def remaining(self, tool: str) -> float:
        self._live()
        return self._budget.remaining(tool)

    def idempotency_key(self, effect_name: str) -> str:
        """R16-12 / R11.4-09: the key an external system deduplicates this effect by (a
        re-run after a crash repeats the call; delivery alone cannot make it once, R16-13)."""
        self._live()
        mission = f"{self.item.group}/{self.item.mission}"
        return external_operation_key(
            mission, self.item.work_item, self.item.ownership_epoch, effect_name
        )

    # preemption (R11.3-12, R11.3-13)
    def should_yield(self) -> bool:
        """The scheduler asked for this slot back: reach a checkpoint soon."""
        return self._preemption.requested or self._block.requested

    def checkpoint(
        self,
        state: bytes | Mapping[str, Any],
        *,
        artifacts: Sequence[str] = (),
        release: bool = False,
    ) -> Checkpoint:
        """Record a safe point durably. If a preemption is pending, this is where the
        handler stops: ``Preempted`` is raised once the checkpoint is on disk (R0-13(2)).

        ``release=True`` makes this checkpoint one the authority keeps (issue 35 §2): the
        handler stops here as if preempted, the runtime stores the state as an artifact and
        sends ``work.checkpoint`` (releasing the lease, R10.2-08), and the item is started
        again from it — on this machine, or on another owner's after a crash (R11.5-01)."""
        self._live()
        checkpoint = self._checkpoints.write(self.item, state, artifacts)
        if release:
            self._preemption.request()  # step 1, asked by the handler itself (R0-13)
        if self._block.reach_checkpoint(checkpoint):  # a block the runtime asked for wins
            raise self._block.blocked()
        if self._preemption.reach_checkpoint(checkpoint):
            raise Preempted(checkpoint)
        return checkpoint

    def block(
        self,
        required_resolution: str,
        state: bytes | Mapping[str, Any] | None = None,
        *,
        artifacts: Sequence[str] = (),
    ) -> NoReturn:
        """Stop here until ``required_resolution`` is met (R11.4-04): the checkpoint of
        ``state`` is written durably (without ``state``, the item's last checkpoint, or the
        one this slot resumed from, is where it resumes), then ``Blocked`` unwinds the
        handler. The runtime sends ``work.block`` and releases the slot; the item resumes
        from this checkpoint once it is unblocked."""
        self._live()
        resolution = check_resolution(required_resolution)
        if state is None:  # this slot's last checkpoint, or the one it resumed from
            checkpoint = self._checkpoints.latest() or self.resume_from
        else:
            checkpoint = self._checkpoints.write(self.item, state, artifacts)
        self._block.stop(checkpoint, resolution)
        raise self._block.blocked()

    def _live(self) -> None:
        if self._closed:
            raise SlotClosed(f"slot {self.slot_id} was released")
        if self._block.stopped:
            raise self._block.blocked()
        if self._preemption.stopping:
            raise Preempted(self._preemption.checkpoint)


# --- the runtime's view -----------------------------------------------------------------------


class Slot:
    """One active slot, as the runtime sees it. The handler never gets this object."""

    def __init__(self, slot_id: str, item: ItemRef, directory: Path, context: SlotContext) -> None:
        self.id = slot_id
        self.item = item
        self.directory = directory
        self.context = context
        self.preemption: Preemption = context._preemption
        self.block: Block = context._block
        self._vault: _TokenVault = context._vault
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._outcome: Outcome | None = None
        self._on_block: OnBlock | None = None

    def request_block(self, required_resolution: str) -> None:
        """Ask the handler to stop, blocked, at its next checkpoint (a refused budget,
        R11.5-13); like a preemption request it interrupts nothing (R11.3-12)."""
        self.block.request(required_resolution)

    def rotate_token(self, name: str, token: str) -> None:
        """Replace or narrow one capability token under the live lease (R11.3-07)."""
        self._vault.put(name, token)

    @property
    def outcome(self) -> Outcome | None:
        return self._outcome

    def join(self, timeout: float | None = None) -> Outcome | None:
        """Wait for a started slot's run to end; its ``Outcome`` (``None`` on timeout)."""
        self._done.wait(timeout)
        return self._outcome


OnCheckpoint = Callable[[ItemRef, Checkpoint], None]
Requeue = Callable[[ItemRef, str], None]
OnDone = Callable[[ItemRef, Outcome], None]
#: ``on_block(item, checkpoint or None, required_resolution)``: send ``work.block`` (R11.4-04)
OnBlock = Callable[[ItemRef, Checkpoint | None, str], None]


class SlotPool:
    """At most ``max_concurrency`` isolated slots under ``root`` (R11.1-04, R11.1-11).

    ``root`` belongs to one pool at a time (an exclusive ``flock`` on ``root/.lock``): at
    start the pool removes slot directories a crashed predecessor left behind, which is only
    safe when nobody else uses them. Checkpoints under ``root/checkpoints`` and kept results
    under ``root/results`` are kept.
    """

    def __init__(self, max_concurrency: int, root: Path) -> None:
        if (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise ValueError("max_concurrency is a positive integer (R11.1-11)")
        self.max_concurrency = max_concurrency
        self.root = Path(root)
        _private_dir(self.root)
        self._lock_fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise SlotError(f"{self.root} is in use by another slot pool") from None
        self._slots_dir = _private_dir(self.root / "slots")
        self._checkpoints_dir = _private_dir(self.root / "checkpoints")
        self._results_dir = _private_dir(self.root / "results")
        for leftover in self._slots_dir.iterdir():  # scratch of a crashed run: may hold secrets
            shutil.rmtree(leftover, ignore_errors=True)
        self._lock = threading.Lock()
        self._active: dict[str, Slot] = {}

    @classmethod
    def from_agent_card(cls, card: Mapping[str, Any], root: Path) -> SlotPool:
        """The pool an Agent Card declares: ``max_concurrency`` (wire.md ``POST /agents``)."""
        return cls(card["max_concurrency"], root)

    def close(self) -> None:
        """Give up ``root`` (slots still active keep running; stop them first)."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> SlotPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # capacity: what Presence reports (R11.1-11)
    @property
    def free(self) -> int:
        with self._lock:
            return self.max_concurrency - len(self._active)

    def active(self) -> list[Slot]:
        with self._lock:
            return list(self._active.values())

    # checkpoints
    def checkpoints(self, group: str, work_item: str) -> CheckpointStore:
        return CheckpointStore(self._checkpoints_dir / _item_key(group, work_item))

    # results kept across an offline shutdown (``kept.py``)
    def result_files(self, group: str, work_item: str) -> ResultFiles:
        return ResultFiles(self._results_dir / _item_key(group, work_item))

    def prune_results(self, keep: Collection[tuple[str, str]]) -> None:
        """Remove the kept outputs of every item not in ``keep``: files a crash left between
        writing them and recording their row, or after deleting it."""
        wanted = {_item_key(group, work_item) for group, work_item in keep}
        for found in self._results_dir.iterdir():
            if found.name not in wanted:
                shutil.rmtree(found, ignore_errors=True)

    # acquire, run, release
    def acquire(self, assignment: Assignment) -> Slot:
        """A fresh slot for ``assignment``; ``NoFreeSlot`` when all are busy, ``AlreadyInSlot``
        when the same WorkItem of the same Group is active (one item, one slot)."""
        item = assignment.item
        _check_item(item)
        vault = _TokenVault(assignment.tokens)
        budget = ToolBudget(assignment.budgets)
        store = self.checkpoints(item.group, item.work_item)
        with self._lock:
            if len(self._active) >= self.max_concurrency:
                vault.wipe()
                raise NoFreeSlot(f"all {self.max_concurrency} slots are busy")
            busy = {(s.item.group, s.item.work_item) for s in self._active.values()}
            if (item.group, item.work_item) in busy:
                vault.wipe()
                raise AlreadyInSlot(f"{item.group}/{item.work_item} already runs in a slot")
            slot_id = secrets.token_hex(8)
            directory = self._slots_dir / slot_id
            directory.mkdir(mode=0o700)
            directory.chmod(0o700)
            context = SlotContext(
                slot_id=slot_id,
                item=item,
                mission_context=assignment.context,
                vault=vault,
                budget=budget,
                files=_SlotFiles(directory),
                checkpoints=store,
                preemption=Preemption(),
                resume_from=assignment.resume_from or store.latest(),
            )
            slot = Slot(slot_id, item, directory, context)
            self._active[slot_id] = slot
        return slot

    def release(self, slot: Slot) -> None:
        """Free an acquired slot that was never started (a started one releases itself)."""
        running = slot._thread
        if running is not None and running.is_alive() and running is not threading.current_thread():
            raise SlotError("a running slot is released by its own run: request preemption")
        self._release(slot)

    def start(
        self,
        assignment: Assignment,
        handler: Callable[[SlotContext], Any],
        *,
        on_checkpoint: OnCheckpoint,
        requeue: Requeue,
        on_done: OnDone | None = None,
        on_block: OnBlock | None = None,
    ) -> Slot:
        """Acquire a slot and run ``handler(ctx)`` in a thread of its own.

        ``on_checkpoint(item, checkpoint)`` is called for the checkpoint a preemption stops at
        (the runtime signs it as ``work.checkpoint``), then the slot is released, then
        ``requeue(item, checkpoint.ref)``. Ordinary checkpoints stay local: on the wire,
        ``work.checkpoint`` releases execution (R10.2-08), so sending one would end the lease
        of an item that is still running. ``on_block(item, checkpoint, resolution)`` is called
        when the handler blocked (``blocking.py``), before the slot is released (R11.4-04).
        ``on_done(item, outcome)`` is told how it ended.
        """
        slot = self.acquire(assignment)
        slot._on_block = on_block
        # not a daemon: the process must not exit under a running handler (R11.3-12); a
        # clean shutdown requests preemption of every active slot and joins them
        slot._thread = threading.Thread(
            target=self._run,
            args=(slot, handler, on_checkpoint, requeue, on_done),
            name=f"mwp-slot-{slot.id}",
        )
        slot._thread.start()
        return slot

    def _run(
        self,
        slot: Slot,
        handler: Callable[[SlotContext], Any],
        on_checkpoint: OnCheckpoint,
        requeue: Requeue,
        on_done: OnDone | None,
    ) -> None:
        try:
            outcome = self._execute(slot, handler, on_checkpoint, requeue)
        except BaseException as exc:  # a runtime bug (IllegalStep): still report an end
            outcome = Outcome("failed", error=exc)
        finally:
            self._release(slot)  # whatever happened, the slot and its tokens are given back
        slot._outcome = outcome
        slot._done.set()
        if on_done is not None:
            on_done(slot.item, outcome)

    def _execute(
        self,
        slot: Slot,
        handler: Callable[[SlotContext], Any],
        on_checkpoint: OnCheckpoint,
        requeue: Requeue,
    ) -> Outcome:
        result: Any = None
        error: BaseException | None = None
        try:
            result = handler(slot.context)
        except (Preempted, Blocked):
            pass
        except BaseException as exc:  # a handler's SystemExit must not leak the slot either
            error = exc
        machine = slot.preemption
        # The phase decides, not how the handler left: once a preemption checkpoint is
        # durable the item is paused, even if the handler swallowed ``Preempted`` and went on
        # to return something (that result is discarded; the work after it will be redone).
        if machine.phase is Phase.CHECKPOINTED:
            checkpoint = machine.checkpoint
            assert isinstance(checkpoint, Checkpoint)
            try:
                complete_preemption(
                    machine,
                    record=lambda: on_checkpoint(slot.item, checkpoint),
                    release=lambda: self._release(slot),
                    requeue=lambda: requeue(slot.item, checkpoint.ref),
                )
            except Exception as exc:
                machine.take(Step.FAIL)
                return Outcome("failed", error=exc, checkpoint=checkpoint)
            return Outcome("preempted", checkpoint=checkpoint)
        if slot.block.stopped:  # as for a preemption, the block decides, not how it left
            return self._blocked(slot)
        if error is not None:
            machine.take(Step.FAIL)
            return Outcome("failed", error=error)
        machine.take(Step.FINISH)
        return Outcome("finished", result=result)

    def _blocked(self, slot: Slot) -> Outcome:
        """R11.4-04's order: the checkpoint is durable (``ctx.block``), the block is recorded
        (``on_block``) while the slot is still held, and only then is the slot released (by
        ``_run``). The preemption machine ends as a run that was not preempted."""
        slot.preemption.take(Step.FINISH)
        checkpoint = slot.block.checkpoint
        assert checkpoint is None or isinstance(checkpoint, Checkpoint)
        resolution = slot.block.resolution or ""
        if slot._on_block is not None:
            try:
                slot._on_block(slot.item, checkpoint, resolution)
            except Exception as exc:
                return Outcome("failed", error=exc, checkpoint=checkpoint, resolution=resolution)
        return Outcome("blocked", checkpoint=checkpoint, resolution=resolution)

    def _release(self, slot: Slot) -> None:
        """Wipe the tokens, close the context, remove the scratch directory; idempotent.
        Checkpoints stay (R11.3-13(5)): the item resumes from them in its next slot."""
        with self._lock:
            self._active.pop(slot.id, None)
        slot.context._closed = True
        slot._vault.wipe()
        shutil.rmtree(slot.directory, ignore_errors=True)


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)  # the umask may have narrowed it, and an existing one may be wider
    return path


def _item_key(group: str, work_item: str) -> str:
    """A file name for (Group, WorkItem): ids are not trusted to be path-safe."""
    return digest({"group": group, "work_item": work_item}).removeprefix("sha256:")[:32]


def _check_item(item: ItemRef) -> None:
    for name in ("group", "mission", "work_item", "lease_id"):
        value = getattr(item, name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} is a non-empty string")
    epoch = item.ownership_epoch
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise ValueError("ownership_epoch is a positive integer")
