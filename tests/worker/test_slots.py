"""Isolated execution slots: R11.1-04, R11.1-11, R11.1-12, R0-08 (MWP-WRK-011)."""

from __future__ import annotations

import gc
import os
import stat
import tempfile
import threading
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.work.execution import validate_checkpoint
from missionweave.worker.slots import (
    AlreadyInSlot,
    Assignment,
    BudgetExceeded,
    IsolationError,
    NoFreeSlot,
    SlotClosed,
    SlotContext,
    SlotError,
    SlotPool,
)


def assignment(
    work_item: str = "wi-a",
    *,
    group: str = "grp-1",
    mission: str = "m-1",
    epoch: int = 1,
    tokens: dict[str, str] | None = None,
    budgets: dict[str, float] | None = None,
    context: dict | None = None,
) -> Assignment:
    return Assignment(
        group=group,
        mission=mission,
        work_item=work_item,
        ownership_epoch=epoch,
        lease_id=f"lease-{work_item}",
        context=context or {"brief": f"context of {work_item}"},
        tokens=tokens or {"tools": f"token-of-{work_item}"},
        budgets=budgets or {"search": 3},
    )


@pytest.fixture
def pool(tmp_path: Path):
    with SlotPool(2, tmp_path / "worker") as pool:
        yield pool


# --- capacity (R11.1-11) ------------------------------------------------------------------------


def test_pool_takes_its_size_from_the_agent_card(tmp_path: Path) -> None:
    """R11.1-11: the Agent Card's ``max_concurrency`` is the number of slots."""
    card = {"name": "w", "version": "1", "capabilities": [], "max_concurrency": 3}
    with SlotPool.from_agent_card(card, tmp_path) as pool:
        assert pool.max_concurrency == 3
        assert pool.free == 3
    with pytest.raises(ValueError, match="max_concurrency"):
        SlotPool(0, tmp_path / "other")


def test_no_more_slots_than_max_concurrency(pool: SlotPool) -> None:
    """R11.1-11: a third item waits while two slots are busy; a release frees one."""
    first = pool.acquire(assignment("wi-a"))
    pool.acquire(assignment("wi-b"))
    with pytest.raises(NoFreeSlot):
        pool.acquire(assignment("wi-c"))
    pool.release(first)
    assert pool.free == 1
    pool.acquire(assignment("wi-c"))
    assert pool.free == 0


def test_one_work_item_never_occupies_two_slots(pool: SlotPool) -> None:
    """R11.1-12: one (Group, WorkItem) per slot, so side-effect keys cannot be shared."""
    pool.acquire(assignment("wi-a"))
    with pytest.raises(AlreadyInSlot):
        pool.acquire(assignment("wi-a", epoch=2))
    pool.acquire(assignment("wi-a", group="grp-2"))  # another Group's item of the same id


def test_a_root_belongs_to_one_pool(tmp_path: Path) -> None:
    """The crash sweep of leftover slot directories is only safe with one pool per root."""
    with SlotPool(1, tmp_path), pytest.raises(SlotError, match="in use"):
        SlotPool(1, tmp_path)


def test_slot_directories_are_private_and_leftovers_are_swept(tmp_path: Path) -> None:
    """R11.1-12: each slot directory is 0700; a crashed run's scratch is removed at start."""
    with SlotPool(1, tmp_path) as pool:
        slot = pool.acquire(assignment())
        slot.context.write_bytes("secret.txt", b"x")
        assert stat.S_IMODE(slot.directory.stat().st_mode) == 0o700
        assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
        assert stat.S_IMODE((slot.directory / "secret.txt").stat().st_mode) == 0o600
        leftover = slot.directory  # the process "crashes": nobody releases the slot
    with SlotPool(1, tmp_path):
        assert not leftover.exists()


# --- credentials ---------------------------------------------------------------------------------


def test_a_slot_sees_only_its_own_tokens(pool: SlotPool) -> None:
    """R11.1-12: credentials are per slot; a returned copy cannot change the slot's tokens."""
    a = pool.acquire(assignment("wi-a"))
    b = pool.acquire(assignment("wi-b"))
    assert a.context.tokens() == {"tools": "token-of-wi-a"}
    assert b.context.tokens() == {"tools": "token-of-wi-b"}
    copy = a.context.tokens()
    copy["tools"] = "token-of-wi-b"
    copy["extra"] = "x"
    assert a.context.tokens() == {"tools": "token-of-wi-a"}


def test_rotating_a_token_changes_only_that_slot(pool: SlotPool) -> None:
    """R11.3-07: the runtime rotates or narrows a token under a live lease."""
    a = pool.acquire(assignment("wi-a"))
    b = pool.acquire(assignment("wi-b"))
    a.rotate_token("tools", "narrowed-a")
    assert a.context.tokens() == {"tools": "narrowed-a"}
    assert b.context.tokens() == {"tools": "token-of-wi-b"}


def test_release_wipes_tokens_and_closes_the_context(pool: SlotPool) -> None:
    """R11.1-12: after release the token bytes are zeroed and the context refuses to work."""
    slot = pool.acquire(assignment("wi-a"))
    held = list(slot._vault._tokens.values())
    pool.release(slot)
    assert all(raw == bytes(len(raw)) for raw in held)
    assert not slot._vault._tokens
    with pytest.raises(SlotClosed):
        slot.context.tokens()
    with pytest.raises(SlotClosed):
        slot.context.read_bytes("anything")
    assert not slot.directory.exists()


def test_the_caller_cannot_change_a_slot_after_acquire(pool: SlotPool) -> None:
    """R11.1-12: the slot keeps copies; the caller's dicts are not the slot's."""
    tokens = {"tools": "t-1"}
    context = {"brief": {"goal": "g"}, "steps": [1, 2]}
    slot = pool.acquire(assignment(tokens=tokens, context=context))
    tokens["tools"] = "changed"
    context["brief"]["goal"] = "changed"
    assert slot.context.tokens() == {"tools": "t-1"}
    assert slot.context.mission_context["brief"]["goal"] == "g"
    with pytest.raises(TypeError):
        slot.context.mission_context["brief"]["goal"] = "x"  # read-only
    assert slot.context.mission_context["steps"] == (1, 2)


def _reachable(root: object) -> list[object]:
    """Everything reachable from ``root`` through object references, without following into
    modules, classes, functions or code (those lead to every global of the process)."""
    stop = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.CodeType)
    seen: dict[int, object] = {id(root): root}
    todo = [root]
    while todo:
        for child in gc.get_referents(todo.pop()):
            if id(child) not in seen and not isinstance(child, stop):
                seen[id(child)] = child
                todo.append(child)
    return list(seen.values())


def test_a_context_holds_no_reference_to_another_slot(pool: SlotPool) -> None:
    """R0-08, R11.1-12: nothing reachable from slot A's context is slot B's state — its
    mission context, tokens, checkpoints, tool budget — nor the pool (which reaches every
    slot)."""
    a = pool.acquire(assignment("wi-a", tokens={"tools": "secret-of-a"}))
    b = pool.acquire(assignment("wi-b", tokens={"tools": "secret-of-b"}))
    reachable = _reachable(a.context)
    ids = {id(value) for value in reachable}
    b_state = [
        b,
        b.context,
        b._vault,
        *b._vault._tokens.values(),
        b.context._budget,
        b.context._files,
        b.context._checkpoints,
        b.preemption,
        b.context.mission_context,
        pool,
        pool._active,
    ]
    assert not [value for value in b_state if id(value) in ids]
    assert "secret-of-b" not in [value for value in reachable if isinstance(value, str)]
    assert not any(isinstance(value, bytearray) and b"secret-of-b" in value for value in reachable)


# --- files ---------------------------------------------------------------------------------------


def test_a_slot_reads_and_writes_its_own_files(pool: SlotPool) -> None:
    slot = pool.acquire(assignment())
    slot.context.write_bytes("out/deep/result.bin", b"42")
    slot.context.write_bytes("./notes.txt", b"n")
    slot.context.write_bytes("notes.txt", b"m")  # overwritten, not appended
    assert slot.context.read_bytes("out/deep/result.bin") == b"42"
    assert slot.context.read_bytes("notes.txt") == b"m"
    assert slot.context.list_files() == ["notes.txt", "out/deep/result.bin"]
    slot.context.delete_file("notes.txt")
    assert slot.context.list_files() == ["out/deep/result.bin"]


@pytest.mark.parametrize(
    "name",
    ["../{b}/secret.txt", "sub/../../{b}/secret.txt", "{b_abs}/secret.txt", "..", "", "."],
)
def test_traversal_and_absolute_paths_are_refused(pool: SlotPool, name: str) -> None:
    """R11.1-12: a slot cannot name a file outside its own directory."""
    a = pool.acquire(assignment("wi-a"))
    b = pool.acquire(assignment("wi-b"))
    b.context.write_bytes("secret.txt", b"b's")
    a.context.write_bytes("sub/x", b"")
    path = name.format(b=b.directory.name, b_abs=b.directory)
    with pytest.raises(IsolationError):
        a.context.read_bytes(path)
    with pytest.raises(IsolationError):
        a.context.write_bytes(path, b"overwrite")
    assert b.context.read_bytes("secret.txt") == b"b's"


def test_symlinks_to_another_slot_are_refused_at_any_depth(pool: SlotPool) -> None:
    """R11.1-12: a symlink planted in slot A (to B's directory or file) never resolves."""
    a = pool.acquire(assignment("wi-a"))
    b = pool.acquire(assignment("wi-b"))
    b.context.write_bytes("secret.txt", b"b's")
    os.symlink(b.directory, a.directory / "to-b")
    os.symlink(b.directory / "secret.txt", a.directory / "secret-link")
    (a.directory / "sub").mkdir()
    os.symlink(b.directory, a.directory / "sub" / "deeper")
    for name in ("to-b/secret.txt", "secret-link", "sub/deeper/secret.txt"):
        with pytest.raises(IsolationError):
            a.context.read_bytes(name)
        with pytest.raises(IsolationError):
            a.context.write_bytes(name, b"overwrite")
    assert b.context.read_bytes("secret.txt") == b"b's"
    assert "to-b/secret.txt" not in a.context.list_files()


def test_a_hard_link_to_another_slots_file_is_refused_untouched(pool: SlotPool) -> None:
    """R11.1-12: a hard link is another name for B's file: neither read nor truncated."""
    a = pool.acquire(assignment("wi-a"))
    b = pool.acquire(assignment("wi-b"))
    b.context.write_bytes("secret.txt", b"b's")
    os.link(b.directory / "secret.txt", a.directory / "linked")
    with pytest.raises(IsolationError):
        a.context.read_bytes("linked")
    with pytest.raises(IsolationError):
        a.context.write_bytes("linked", b"")
    assert (b.directory / "secret.txt").read_bytes() == b"b's"
    with pytest.raises(IsolationError):  # it fails closed for B too: its file has two names
        b.context.read_bytes("secret.txt")


def test_a_fifo_does_not_hang_a_read(pool: SlotPool) -> None:
    slot = pool.acquire(assignment())
    os.mkfifo(slot.directory / "pipe")
    with pytest.raises(IsolationError):
        slot.context.read_bytes("pipe")


# --- tool budgets --------------------------------------------------------------------------------


def test_tool_budget_refuses_spending_past_its_limit(pool: SlotPool) -> None:
    """R11.1-12: a refused spend charges nothing; an unbudgeted tool is refused."""
    ctx = pool.acquire(assignment(budgets={"search": 3, "llm": 1.5})).context
    assert ctx.spend("search") == 2
    assert ctx.spend("search", 2) == 0
    with pytest.raises(BudgetExceeded):
        ctx.spend("search")
    assert ctx.spend("llm", 1.0) == 0.5
    with pytest.raises(BudgetExceeded):
        ctx.spend("llm", 0.75)
    assert ctx.remaining("llm") == 0.5
    with pytest.raises(BudgetExceeded):
        ctx.spend("shell")
    with pytest.raises(ValueError, match="positive"):
        ctx.spend("llm", -1)


def test_tool_budgets_are_per_slot(pool: SlotPool) -> None:
    """R11.1-12: one slot exhausting its budget leaves another slot's untouched."""
    a = pool.acquire(assignment("wi-a", budgets={"search": 1})).context
    b = pool.acquire(assignment("wi-b", budgets={"search": 1})).context
    a.spend("search")
    with pytest.raises(BudgetExceeded):
        a.spend("search")
    assert b.remaining("search") == 1
    b.spend("search")


def test_concurrent_spending_never_exceeds_the_budget(pool: SlotPool) -> None:
    """A handler's own threads race for the budget: exactly ``limit`` spends succeed."""
    ctx = pool.acquire(assignment(budgets={"search": 50})).context
    granted: list[int] = []
    barrier = threading.Barrier(8)

    def spend() -> None:
        barrier.wait()
        for _ in range(20):
            try:
                ctx.spend("search")
            except BudgetExceeded:
                continue
            granted.append(1)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(granted) == 50
    assert ctx.remaining("search") == 0


# --- side-effect keys (R16-12) ------------------------------------------------------------------

ids = st.text(alphabet="abcdefghij-:/0123", min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(
    items=st.lists(st.tuples(ids, ids, ids, st.integers(1, 5)), min_size=2, max_size=4),
    effects=st.lists(ids, min_size=1, max_size=4),
)
def test_idempotency_keys_never_collide_across_slots(
    items: list[tuple[str, str, str, int]], effects: list[str]
) -> None:
    """R0-08, R11.1-12, R16-12: every side-effect key a slot derives differs from every key
    of every other active slot, for any ids (including ones that only differ by where a
    separator sits)."""
    with tempfile.TemporaryDirectory() as root, SlotPool(len(items), Path(root)) as pool:
        keys: dict[str, str] = {}
        for group, mission, work_item, epoch in items:
            try:
                slot = pool.acquire(
                    assignment(work_item, group=group, mission=mission, epoch=epoch)
                )
            except AlreadyInSlot:
                continue  # the same (Group, WorkItem) cannot run in two slots at once
            for effect in effects:
                key = slot.context.idempotency_key(effect)
                assert keys.setdefault(key, slot.id) == slot.id
                assert key == slot.context.idempotency_key(effect)  # stable within the slot


def test_the_same_owner_keeps_its_keys_in_a_new_slot(pool: SlotPool) -> None:
    """R16-12, R11.4-09: a retry in a new slot after a checkpoint keeps the key, so the
    external system deduplicates it; a reassignment (higher epoch) gets new keys."""
    first = pool.acquire(assignment("wi-a", epoch=1))
    key = first.context.idempotency_key("send-invoice")
    pool.release(first)
    again = pool.acquire(assignment("wi-a", epoch=1))
    assert again.context.idempotency_key("send-invoice") == key
    pool.release(again)
    reassigned = pool.acquire(assignment("wi-a", epoch=2))
    assert reassigned.context.idempotency_key("send-invoice") != key


def test_a_re_run_repeats_the_external_call_and_only_its_key_makes_it_happen_once(
    pool: SlotPool,
) -> None:
    """R16-13, R16-12: re-execution alone cannot make an external effect happen once: a
    handler that died after its call and before its checkpoint runs again in a new slot and
    makes the call again; both calls carry the same key, so a system that deduplicates by
    it does the work once."""
    calls: list[str] = []
    done: dict[str, str] = {}

    def handler(ctx: SlotContext) -> None:
        key = ctx.idempotency_key("send-invoice")
        calls.append(key)
        done.setdefault(key, "invoice 42 sent")  # the external system, deduplicating

    first = pool.acquire(assignment("wi-a"))
    handler(first.context)
    pool.release(first)  # died before any checkpoint
    again = pool.acquire(assignment("wi-a"))
    assert again.context.resume_from is None
    handler(again.context)
    assert len(calls) == 2
    assert calls[0] == calls[1]
    assert list(done.values()) == ["invoice 42 sent"]


# --- checkpoints ---------------------------------------------------------------------------------


def test_checkpoints_are_durable_private_and_outlive_the_slot(tmp_path: Path) -> None:
    """R11.1-12, R11.3-13(5): a checkpoint survives release and a restart of the pool, and a
    new slot of the same item (only) resumes from the latest one."""
    with SlotPool(2, tmp_path) as pool:
        slot = pool.acquire(assignment("wi-a"))
        assert slot.context.resume_from is None
        slot.context.checkpoint({"next": 3})
        last = slot.context.checkpoint(b"\x00raw", artifacts=["sha256:" + "a" * 64])
        pool.release(slot)
    with SlotPool(2, tmp_path) as pool:
        resumed = pool.acquire(assignment("wi-a"))
        other = pool.acquire(assignment("wi-b"))
        assert resumed.context.resume_from == last
        assert resumed.context.resume_from.state == b"\x00raw"
        assert other.context.resume_from is None
        store = next((tmp_path / "checkpoints").iterdir())
        assert stat.S_IMODE(store.stat().st_mode) == 0o700
        with pytest.raises(IsolationError):
            resumed.context.read_bytes(f"../../checkpoints/{store.name}/000000000001.json")


def test_checkpoint_wire_form_is_what_work_checkpoint_accepts(pool: SlotPool) -> None:
    """R10.2-08: the runtime signs ``checkpoint.wire()`` as the body of ``work.checkpoint``."""
    ctx = pool.acquire(assignment("wi-a")).context
    checkpoint = ctx.checkpoint({"next": 1, "notes": ["a"]})
    validate_checkpoint(
        {"work_item": "wi-a", "lease_id": "lease-wi-a", "checkpoint": checkpoint.wire()}
    )
    assert checkpoint.wire()["state_digest"].startswith("sha256:")
    with pytest.raises(ValueError):
        ctx.checkpoint({"bad": float("nan")})
    with pytest.raises(TypeError):
        ctx.checkpoint(["not", "an", "object"])  # type: ignore[arg-type]
