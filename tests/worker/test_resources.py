"""Contract ``resources`` reach admission and the scheduler (R10.3-08, R11.1-09, issue 35 §8).

A contract's named resource amounts (``{"max_concurrency": 1, "gpu": 1}``) are what the item
holds while it runs. Admission refuses an offer whose amounts this worker can never provide
(R10.3-10 reason ``capability``); the scheduler starts an item only when its amounts are free
now, holds them while it runs and frees them when its slot is released.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.examples import example_contract
from missionweave.worker.admission import AdmissionOffer, AdmissionState, admit
from missionweave.worker.config import ConfigError, GroupConfig, load_config
from missionweave.worker.intake import queued_item
from missionweave.worker.queues import terms_of
from missionweave.worker.resources import ResourceLedger, needed_amounts, needs_of
from missionweave.worker.scheduler import QueuedItem, Resources, Scheduler

from .runtime_world import Gate, world
from .scheduler_sim import T0, at
from .test_config import VALID, _write

ALPHA = "g-alpha"


def _contract(**resources: float) -> dict[str, object]:
    return example_contract(resources={"max_concurrency": 1, **resources})


def _item(name: str, **amounts: float) -> QueuedItem:
    return QueuedItem(
        group="g1",
        work_item=name,
        mission="m",
        urgency="normal",
        deadline=None,
        queued_at=T0,
        needs=needs_of(amounts),
        estimated_seconds=60,
    )


def test_only_named_amounts_are_needs_not_the_concurrency_or_the_estimate() -> None:
    """R10.1-01(d): ``max_concurrency`` and ``estimated_compute_s`` describe the item; every
    other named amount is a resource it holds while it runs."""
    resources = {"max_concurrency": 2, "estimated_compute_s": 90, "gpu": 1, "memory_gb": 8}
    assert needed_amounts(resources) == {"gpu": 1.0, "memory_gb": 8.0}
    assert needs_of({}) == needs_of(None)
    assert needs_of({"gpu": 0}).fits(Resources(slots=1))  # a zero amount needs nothing


def test_the_queued_item_carries_the_contracts_needs() -> None:
    """R11.1-09: the terms a worker keeps for an accepted item carry its resource needs."""
    terms = terms_of(_contract(gpu=1))
    assert terms["needs"] == {"gpu": 1.0}
    row = {
        "group": "g1",
        "work_item": "wi-1",
        "mission": "m",
        "terms": terms,
        "queued_at": "2026-01-01T00:00:00Z",
        "gate": {
            "requires_execution_approval": False,
            "approvals_required": 0,
            "approvals": [],
            "refused_by": None,
        },
    }
    item = queued_item(row, GroupConfig())  # type: ignore[arg-type]
    assert item.needs == needs_of({"gpu": 1})
    # a row kept before needs were recorded needs nothing
    del row["terms"]["needs"]  # type: ignore[misc]
    assert queued_item(row, GroupConfig()).needs == needs_of({})  # type: ignore[arg-type]


def _admission(contract: dict[str, object], have: dict[str, float]) -> list[tuple[str, str]]:
    offer = AdmissionOffer.from_contract(
        group="g1",
        work_item="wi-new",
        mission="m",
        offer="of-1",
        contract=contract,
        queued_at=T0,
        needs=needs_of(needed_amounts(contract["resources"])),  # type: ignore[arg-type]
    )
    ledger = ResourceLedger(have)
    state = AdmissionState(
        now=T0,
        scheduler=Scheduler(),
        slots=2,
        resources=ledger.totals(2),
        capabilities=frozenset({("text.summarise", "1")}),
        authorized_groups=frozenset({"g1"}),
        max_queued=10,
    )
    return [(r.reason, r.detail) for r in admit(offer, state).refusals]


def test_admission_refuses_what_the_worker_can_never_provide() -> None:
    """R10.3-08, R10.3-10: a resource this worker has none of, or less of in all than the
    contract needs, is a lasting ``capability`` refusal naming the resource."""
    assert _admission(_contract(gpu=1), {}) == [("capability", "needs gpu 1, this worker has none")]
    assert _admission(_contract(memory_gb=16), {"memory_gb": 8}) == [
        ("capability", "needs memory_gb 16, this worker has 8 in all")
    ]
    assert _admission(_contract(gpu=1, memory_gb=8), {"gpu": 1, "memory_gb": 8}) == []


def test_admission_accepts_what_is_busy_now_but_will_be_free() -> None:
    """R10.3-07: acceptance is a commitment to schedule; a resource held by running work is
    no reason to refuse."""
    ledger = ResourceLedger({"gpu": 1})
    ledger.hold(("g1", "wi-running"), needs_of({"gpu": 1}))
    assert ledger.totals(2).amounts == {"gpu": 1.0}
    assert ledger.free(2).amounts == {"gpu": 0.0}


def test_an_item_starts_only_when_its_resources_are_free_and_frees_them_when_it_ends() -> None:
    """R11.1-09, R0-06: with one GPU and three slots, the second GPU item waits while the
    first holds the GPU; work that needs no GPU takes the spare slot; when the first item's
    slot is released the second starts."""
    scheduler = Scheduler()
    ledger = ResourceLedger({"gpu": 1})
    for item in (_item("gpu-1", gpu=1), _item("gpu-2", gpu=1), _item("cpu-1")):
        scheduler.enqueue(item)
    started = []
    for _ in range(3):
        pick = scheduler.pick(ledger.free(3 - len(started)), T0)
        if pick is None:
            break
        ledger.hold((pick.item.group, pick.item.work_item), pick.item.needs)
        started.append(pick.item.work_item)
    assert started == ["gpu-1", "cpu-1"]
    assert scheduler.pick(ledger.free(1), at(1)) is None  # the GPU is busy
    scheduler.finish("g1", "gpu-1", used_seconds=60)
    ledger.release(("g1", "gpu-1"))
    pick = scheduler.pick(ledger.free(2), at(60))
    assert pick is not None
    assert pick.item.work_item == "gpu-2"


def test_the_ledger_never_frees_twice_nor_holds_what_is_not_free() -> None:
    """Holding is per item: releasing an item twice, or one never held, frees nothing more."""
    ledger = ResourceLedger({"gpu": 2})
    ledger.hold(("g1", "a"), needs_of({"gpu": 1}))
    ledger.release(("g1", "a"))
    ledger.release(("g1", "a"))
    ledger.release(("g1", "never"))
    assert ledger.free(1).amounts == {"gpu": 2.0}
    ledger.hold(("g1", "b"), needs_of({"gpu": 2}))
    with pytest.raises(ValueError):
        ledger.hold(("g1", "c"), needs_of({"gpu": 1}))


def test_the_config_declares_what_the_worker_has(tmp_path: Path) -> None:
    """R11.1-11: besides its slots, a worker declares its named resources in ``[resources]``."""
    config = load_config(_write(tmp_path, VALID + "\n[resources]\ngpu = 1\nmemory_gb = 64\n"))
    assert config.resources == {"gpu": 1.0, "memory_gb": 64.0}
    assert load_config(_write(tmp_path, VALID)).resources == {}
    for bad, key in (
        ("gpu = -1", "resources.gpu"),
        ('gpu = "one"', "resources.gpu"),
        ("max_concurrency = 2", "resources.max_concurrency"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_config(_write(tmp_path, VALID + f"\n[resources]\n{bad}\n"))
        assert caught.value.path == key


def test_the_runtime_runs_one_gpu_item_at_a_time_on_a_one_gpu_worker(tmp_path: Path) -> None:
    """R10.3-08, R11.1-09: end to end in the runtime. A worker with two slots and one GPU
    refuses work needing two GPUs, accepts two items needing one each, starts one while the
    other waits in its queue with a slot free, and starts the second once the first has left
    its slot."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}, slots=2, resources={"gpu": 1}) as w:
        w.authority.story(ALPHA, "wi-big", resources={"max_concurrency": 1, "gpu": 2})
        w.authority.offer(ALPHA, "wi-big")
        for name in ("wi-1", "wi-2"):
            w.authority.story(ALPHA, name, resources={"max_concurrency": 1, "gpu": 1})
            w.authority.offer(ALPHA, name)
        w.until(lambda: len(w.sent("work.accept_offer")) == 2 and gate.started.is_set())
        (rejected,) = w.sent("work.reject_offer")
        assert rejected.body["work_item"] == "wi-big"
        assert rejected.body["reason"] == "capability"
        assert "needs gpu 2, this worker has 1 in all" in rejected.body["detail"]
        w.until(lambda: len(w.sent("work.start")) == 1)
        for _ in range(20):  # the free slot stays free: the GPU is held
            w.tick()
        assert len(w.sent("work.start")) == 1
        assert w.worker.pool.free == 1
        assert w.worker.resources.held() == {"gpu": 1.0}
        gate.release.set()
        w.until(lambda: {w.state(ALPHA, n) for n in ("wi-1", "wi-2")} == {S.SUBMITTED})
        assert len(w.sent("work.start")) == 2
        assert w.worker.resources.held() == {}
