"""Build WorkItems the way agents do: real commands through the one write path.

Shared by the dashboard page tests and the browser tests. w1 is the coordinator agent, w2 the
worker agent of ``tests.factories.build_world``.
"""

from __future__ import annotations

import json
from typing import Any

from apps.ledger.models import Event, GroupLog
from apps.ledger.write_path import Outcome, submit_authority_command, submit_command
from apps.work import reviews
from apps.work.models import WorkItem
from apps.work.tasks import STORE
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import example_contract
from missionweave.protocol.work.checks import SELECTION_BASIS_FIELDS
from missionweave.protocol.work.leases import reassign_command_id
from tests.factories import (
    AgentPersona,
    HumanPersona,
    World,
    mission_body,
    now_text,
    store_bytes,
    unique,
)

SELECTION_BASIS = dict.fromkeys(SELECTION_BASIS_FIELDS, "chosen for the test")


def submit(
    persona: AgentPersona | HumanPersona, group: str, type_: str, body: dict[str, Any]
) -> Outcome:
    return submit_command(
        group_id=group, document=persona.command(group, type_, body), caller=persona.caller
    )


def gated_contract(approvals: int = 2, **overrides: Any) -> dict[str, Any]:
    """A contract whose execution needs ``approvals`` distinct mission owners (R10.2-06)."""
    risk = {"class": "high", "requires_execution_approval": True, "approvals_required": approvals}
    return example_contract(risk=risk, **overrides)


def head(group: str) -> int:
    return GroupLog.objects.get(group_id=group).head_sequence


def last_event(group: str) -> dict[str, Any]:
    """The group's newest event, as its signed document says it."""
    return json.loads(Event.objects.filter(group_id=group).order_by("-sequence")[0].document)


def state_of(group: str, item: str) -> str:
    return WorkItem.objects.get(group_id=group, work_item_id=item).state


def mission(world: World, mission_id: str | None = None, **extra: Any) -> str:
    """w1 creates a mission (``parent=``, ``budgets=`` and the like go in ``extra``)."""
    body = mission_body(mission_id, **extra)
    submit(world.w1, world.group, "mission.create", body)
    return body["mission"]


def authorize(
    world: World,
    mission_id: str,
    *,
    item: str | None = None,
    contract: dict[str, Any] | None = None,
    depends_on: tuple[str, ...] = (),
    proposal: str | None = None,
) -> str:
    item = item or unique("wi")
    body: dict[str, Any] = {
        "work_item": item,
        "mission": mission_id,
        "contract": contract or example_contract(),
        "depends_on": list(depends_on),
    }
    if proposal is not None:
        body["proposal"] = proposal
    submit(world.w1, world.group, "work.authorize", body)
    return item


def offer(world: World, item: str, *, contract: dict[str, Any] | None = None) -> str:
    """An urgent offer of ``item`` to w2 (a new contract makes a new revision, R10.1-05)."""
    offer_id = unique("o")
    body: dict[str, Any] = {
        "work_item": item,
        "offers": [{"offer": offer_id, "worker": world.w2.principal, "expires_at": now_text(600)}],
        "mode": "urgent",
        "selection_basis": SELECTION_BASIS,
    }
    if contract is not None:
        body["contract"] = contract
    submit(world.w1, world.group, "work.offer", body)
    return offer_id


def accept(world: World, item: str, offer_id: str, revision: int = 1) -> int:
    outcome = submit(
        world.w2,
        world.group,
        "work.accept_offer",
        {"work_item": item, "offer": offer_id, "contract_revision": revision},
    )
    return outcome.body["result"]["ownership_epoch"]


def queued(
    world: World,
    mission_id: str,
    *,
    item: str | None = None,
    contract: dict[str, Any] | None = None,
    proposal: str | None = None,
) -> str:
    """Authorised, offered to w2 and accepted by it: ``queued`` with w2 as owner, epoch 1."""
    item = authorize(world, mission_id, item=item, contract=contract, proposal=proposal)
    accept(world, item, offer(world, item))
    return item


def start(world: World, item: str, epoch: int = 1, *, lease_ttl_s: int | None = None) -> str:
    """w2 starts ``item`` (a lease of ``lease_ttl_s`` seconds if given); returns the lease id."""
    body: dict[str, Any] = {"work_item": item, "ownership_epoch": epoch}
    if lease_ttl_s is not None:
        body["lease_ttl_s"] = lease_ttl_s
    outcome = submit(world.w2, world.group, "work.start", body)
    return outcome.body["result"]["lease"]["lease_id"]


def renew(world: World, item: str, lease: str, *, lease_ttl_s: int | None = None) -> str:
    """w2 renews its lease (R11.3-03); returns the new expiry."""
    body: dict[str, Any] = {"work_item": item, "lease_id": lease}
    if lease_ttl_s is not None:
        body["lease_ttl_s"] = lease_ttl_s
    outcome = submit(world.w2, world.group, "lease.renew", body)
    return outcome.body["result"]["lease"]["expires_at"]


def use(world: World, item: str, lease: str, **usage: float) -> Outcome:
    """w2 charges usage to ``item`` and, through it, to every mission above it (R11.5-12)."""
    return submit(
        world.w2, world.group, "work.usage", {"work_item": item, "lease_id": lease, "usage": usage}
    )


def checkpoint(world: World, item: str, lease: str, ref: str = "ckpt-1") -> Outcome:
    """w2 checkpoints: the lease is released, the item queued again (R10.2-08)."""
    body = {
        "work_item": item,
        "lease_id": lease,
        "checkpoint": {"ref": ref, "state_digest": sha256_digest(ref.encode()), "artifacts": []},
    }
    return submit(world.w2, world.group, "work.checkpoint", body)


def block(world: World, item: str, lease: str, resolution: str, ref: str = "blk-1") -> Outcome:
    """w2 blocks: checkpoint, ``work.blocked`` with what it needs, the slot freed (R11.4-04)."""
    body = {
        "work_item": item,
        "lease_id": lease,
        "required_resolution": resolution,
        "checkpoint": {"ref": ref, "state_digest": sha256_digest(ref.encode()), "artifacts": []},
    }
    return submit(world.w2, world.group, "work.block", body)


def reassign(group: str, item: str, *, epoch: int = 1, reason: str = "lease_expired") -> Outcome:
    """What the Celery sweep submits once ``item`` is due (R11.5-01), with its command id."""
    return submit_authority_command(
        group_id=group,
        type_="work.reassign",
        body={"work_item": item, "ownership_epoch": epoch, "reason": reason},
        command_id=reassign_command_id(item, epoch),
    )


#: each criterion of the example contract and the method that judges it (R13.2-04)
METHODS = {c["id"]: c["method"] for c in example_contract()["acceptance_criteria"]}


def evidence(producer: str, criterion: str = "c1", verdict: str = "pass") -> dict[str, Any]:
    """Evidence by ``producer`` (its sender, R13.2-04) with its criterion's method, citing
    bytes the producer uploaded first (a command names only stored artifacts, wire.md §9)."""
    return {
        "criterion": criterion,
        "method": METHODS.get(criterion, "deterministic"),
        "result": {"verdict": verdict, "summary": f"{criterion}: {verdict}", "data": {}},
        "producer": producer,
        "artifacts": [store_bytes(producer, criterion.encode())],
    }


def submit_result(world: World, item: str, lease: str, artifact: bytes = b"summary.md") -> Outcome:
    """w2's ``work.submit`` of ``artifact`` (uploaded by w2), the example contract's one
    output (R13.2-02), with evidence for both of its criteria."""
    body = {
        "work_item": item,
        "lease_id": lease,
        "artifacts": [store_bytes(world.w2.principal, artifact)],
        "evidence": [evidence(world.w2.principal, c) for c in ("c1", "c2")],
    }
    return submit(world.w2, world.group, "work.submit", body)


def fail_as_owner(world: World, item: str, lease: str) -> Outcome:
    """w2 fails its attempt: a retry after backoff while the contract allows (R11.4-08)."""
    body = {
        "work_item": item,
        "lease_id": lease,
        "evidence": [evidence(world.w2.principal, verdict="fail")],
    }
    return submit(world.w2, world.group, "work.fail", body)


def approve(persona: HumanPersona, group: str, item: str, revision: int = 1) -> Outcome:
    return submit(
        persona,
        group,
        "approval.grant_execution",
        {"work_item": item, "contract_revision": revision, "comment": "fine by me"},
    )


def failure_evidence(world: World) -> list[dict[str, Any]]:
    return [
        {
            "criterion": "c1",
            "method": "deterministic",
            "result": {"verdict": "fail", "summary": "the contract was wrong", "data": {}},
            "producer": world.w1.principal,
            "artifacts": [],
        }
    ]


def revise_contract(world: World, item: str, goal: str) -> None:
    """The coordinator fails a queued gated item and has its owner accept a corrected
    contract with ``goal``: revision 2 (the queued owner holds it until then, R10.2-03), so a
    page read before shows a stale revision (R10.1-05)."""
    submit(
        world.w1, world.group, "work.fail", {"work_item": item, "evidence": failure_evidence(world)}
    )
    accept(world, item, offer(world, item, contract=gated_contract(2, goal=goal)), revision=2)


def verified_item(world: World, mission: str, *, depends_on: tuple[str, ...] = ()) -> str:
    """An item of the example contract, submitted by w2, checked by the authority
    (R13.2-03 steps 1–2) and accepted by olga with a note per criterion: what a mission's
    final approval (R10.2-13) waits for."""
    item = authorize(world, mission, depends_on=depends_on)
    accept(world, item, offer(world, item))
    lease = start(world, item)
    submit_result(world, item, lease, artifact=b"# Summary\n\nEvery incident.\n")
    reviews.review_submission(STORE, world.group, item)
    review = {
        "verdicts": [
            {"criterion": "c1", "verdict": "pass", "note": "checks pass"},
            {"criterion": "c2", "verdict": "pass", "note": "reads neutral to me"},
        ],
        "summary": "Good to go.",
    }
    submit(world.olga, world.group, "work.accept_result", {"work_item": item, "review": review})
    assert state_of(world.group, item) == "verified"
    return item


def blocked_on_child(world: World, child_group: str, goal: str) -> tuple[str, str]:
    """A WorkItem of a new mission blocked on a child mission ``goal`` in ``child_group``
    (R10.2-15): the item and the child's id."""
    item = authorize(world, mission(world))
    child = unique("m-child")
    body = {"mission": child, "group": child_group, "goal": goal, "budgets": {}}
    submit(
        world.w1,
        world.group,
        "mission.create_child",
        {"work_item": item, "child": body, "failure_policy": "block_parent"},
    )
    return item, child
