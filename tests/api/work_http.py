"""An HTTP client of the WorkItem capability written from wire.md alone (§3, §4, §6, §8, §9).

Everything goes over ``/api/v1`` with bearer tokens and signed envelopes; the only thing read
from the database is nothing: "nothing appended" is checked against the group's served head
(``GET /groups/{g}/head``), as an independent client would check it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rest_framework.test import APIClient

from apps.work import reviews, tasks
from missionweave.protocol.examples import example_contract
from tests.factories import (
    AgentPersona,
    HumanPersona,
    World,
    agent,
    build_world,
    grant,
    human,
    now_text,
    store_bytes,
)

from .http import error_of, get, json_of, submit

Persona = AgentPersona | HumanPersona

SELECTION_BASIS_FIELDS = (
    "capability_match", "authorization_eligibility", "availability_estimate", "expected_cost",
    "reliability_evidence", "policy_rules",
)  # fmt: skip


@dataclass
class WorkWorld:
    """``build_world`` plus the extra people a WorkItem's life needs.

    ``w1`` coordinator (agent), ``w2`` and ``w3`` workers, ``olga`` and ``oscar`` human
    mission_owners, ``cora`` a human who is coordinator and mission_owner (so her own
    authorisations meet SELF_APPROVAL rather than the humans-only rule), ``rex`` a reviewer
    agent, ``mo_agent`` an agent holding mission_owner (to show the humans-only rules), and
    ``stranger`` an agent who belongs to no group.
    """

    base: World
    w3: AgentPersona
    oscar: HumanPersona
    cora: HumanPersona
    rex: AgentPersona
    mo_agent: AgentPersona
    stranger: AgentPersona

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


def build_work_world() -> WorkWorld:
    base = build_world()
    alice, group = base.alice, base.group
    w3 = agent("w3", base.org)
    rex = agent("rex", base.org)
    mo_agent = agent("mo-agent", base.org)
    stranger = agent("stranger", base.org)
    oscar = human("oscar")
    cora = human("cora")
    grant(alice, group, w3, "worker")
    grant(alice, group, rex, "reviewer")
    grant(alice, group, mo_agent, "mission_owner")
    grant(alice, group, oscar, "mission_owner")
    grant(alice, group, cora, "coordinator", "mission_owner")
    for persona in (w3, rex, mo_agent, stranger):
        persona.open_session()
    return WorkWorld(base, w3, oscar, cora, rex, mo_agent, stranger)


def token_of(persona: Persona) -> str:
    return persona.token


# --- the client -------------------------------------------------------------------------


@dataclass
class Wire:
    """One group seen over HTTP; ``reader`` is a member whose token reads the head."""

    api: APIClient
    group: str
    reader: Persona

    def send(self, persona: Persona, type_: str, body: dict[str, Any], **over: Any) -> Any:
        group = over.pop("group", self.group)
        document = persona.command(group, type_, body, **over)
        return submit(self.api, group, document, token_of(persona))

    def ok(
        self, persona: Persona, type_: str, body: dict[str, Any], status: int = 201, **over: Any
    ) -> dict[str, Any]:
        """An accepted command: the wire §4 answer, with consecutive event sequences (none
        for a repeat that is only answered, such as a late result already kept)."""
        answer = json_of(self.send(persona, type_, body, **over), status)
        assert set(answer) == {"command_id", "events", "result"}, answer
        sequences = [event["sequence"] for event in answer["events"]]
        first = sequences[0] if sequences else 0
        assert sequences == list(range(first, first + len(sequences))), answer
        return answer

    def refused(
        self,
        persona: Persona,
        type_: str,
        body: dict[str, Any],
        status: int,
        code: str,
        requirement: str | None = None,
        **over: Any,
    ) -> dict[str, Any]:
        """A refusal (wire §8) that appended nothing to the group's log (wire §6)."""
        group = over.get("group", self.group)
        before = self.head(group)
        error = error_of(self.send(persona, type_, body, **over), status, code)
        if requirement is not None:
            assert error["requirement"] == requirement, error
        assert self.head(group) == before, f"{type_} was refused but appended events"
        return error

    def upload(self, persona: Persona, data: bytes) -> str:
        """Store ``data`` as ``persona``, as ``PUT /artifacts/{digest}`` does; the digest.

        Through the store itself: the artifact endpoints are answered by a raw ASGI
        application ahead of Django (``apps/artifacts/asgi.py``), which ``APIClient`` does not
        reach. A command may then name the digest (wire.md §9, "A digest is not a key")."""
        return store_bytes(persona.principal, data)

    def head(self, group: str | None = None) -> int:
        path = f"/groups/{group or self.group}/head"
        return json_of(get(self.api, path, token_of(self.reader)), 200)["sequence"]

    def item(self, work_item: str, persona: Persona | None = None) -> dict[str, Any]:
        path = f"/groups/{self.group}/work-items/{work_item}"
        return json_of(get(self.api, path, token_of(persona or self.reader)), 200)

    def mission(
        self, mission: str, persona: Persona | None = None, group: str | None = None
    ) -> dict[str, Any]:
        path = f"/groups/{group or self.group}/missions/{mission}"
        return json_of(get(self.api, path, token_of(persona or self.reader)), 200)

    def events(
        self, after: int = 0, group: str | None = None, persona: Persona | None = None
    ) -> list[dict[str, Any]]:
        """Every event after ``after``, following ``next_after`` page by page."""
        found: list[dict[str, Any]] = []
        while True:
            path = f"/groups/{group or self.group}/events?after={after}&limit=1000"
            page = json_of(get(self.api, path, token_of(persona or self.reader)), 200)
            found.extend(page["events"])
            if page["next_after"] == after or page["next_after"] >= page["head"]:
                return found
            after = page["next_after"]


def raw_json(response: Any) -> Any:
    return json.loads(response.content)


# --- bodies, as wire.md §9 and §10 write them ------------------------------------------------


def contract(**overrides: Any) -> dict[str, Any]:
    """The wire §10 contract with a deadline two days ahead (so start deadlines never clip)."""
    return example_contract(deadline=now_text(2 * 86400), **overrides)


def approval_risk(approvals: int) -> dict[str, Any]:
    return {"class": "high", "requires_execution_approval": True, "approvals_required": approvals}


def machine_criteria() -> list[dict[str, Any]]:
    """Criteria a coordinator agent may accept alone (no ``human_review``)."""
    return [
        {
            "id": "c1",
            "description": "Covers every report",
            "method": "deterministic",
            "evidence": ["test_result"],
        }
    ]


def basis(**overrides: Any) -> dict[str, Any]:
    """A structured selection basis with the six keys of R10.3-11."""
    value: dict[str, Any] = {
        "capability_match": {"text.summarise": "1"},
        "authorization_eligibility": "member with worker role",
        "availability_estimate": {"slots_free": 1},
        "expected_cost": {"money": 1.0},
        "reliability_evidence": ["12 of 12 verified"],
        "policy_rules": ["prefer-idle"],
    }
    value.update(overrides)
    return value


def offer_body(
    work_item: str,
    offers: list[tuple[str, Persona, str]],
    mode: str = "urgent",
    **extra: Any,
) -> dict[str, Any]:
    """``offers`` as (offer id, worker, expires_at)."""
    return {
        "work_item": work_item,
        "offers": [
            {"offer": offer, "worker": worker.principal, "expires_at": expires_at}
            for offer, worker, expires_at in offers
        ],
        "mode": mode,
        "selection_basis": extra.pop("selection_basis", basis()),
        **extra,
    }


def authorize_body(
    work_item: str, mission: str, depends_on: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "mission": mission,
        "contract": extra.pop("contract", None) or contract(),
        "depends_on": depends_on or [],
        **extra,
    }


def evidence(
    criterion: str, producer: Persona, method: str = "deterministic", verdict: str = "pass"
) -> dict[str, Any]:
    return {
        "criterion": criterion,
        "method": method,
        "result": {"verdict": verdict, "summary": f"{criterion}: {verdict}", "data": {}},
        "producer": producer.principal,
        "artifacts": [],
    }


#: what a worker submits as the example contract's one declared output, ``summary``
SUMMARY = b"# November incidents\n\nEvery report, summarised in one page.\n"


def submission(
    wire: Wire,
    worker: Persona,
    work_item: str,
    lease_id: str,
    evidence: list[dict[str, Any]],
    data: bytes = SUMMARY,
) -> dict[str, Any]:
    """A ``work.submit`` body with one stored artifact for the contract's one declared output
    (R13.2-02), uploaded by ``worker`` first: a command names only bytes its sender may name
    (wire.md §9)."""
    return {
        "work_item": work_item,
        "lease_id": lease_id,
        "artifacts": [wire.upload(worker, data)],
        "evidence": evidence,
    }


def review(*criteria: str) -> dict[str, Any]:
    return {
        "verdicts": [{"criterion": c, "verdict": "pass", "note": ""} for c in criteria],
        "summary": "every criterion passes",
    }


def progress_body(work_item: str, lease_id: str) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "lease_id": lease_id,
        "phase": "drafting",
        "milestones_completed": ["read reports"],
        "next_checkpoint": "draft complete",
        "blockers": [],
        "estimate": {"finish_at": now_text(3600), "confidence": 0.7},
        "evidence_refs": [],
    }


def checkpoint_body(work_item: str, lease_id: str) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "lease_id": lease_id,
        "checkpoint": {"ref": "draft-1", "state_digest": "sha256:" + "ab" * 32, "artifacts": []},
    }


def mission_create_body(mission: str, **extra: Any) -> dict[str, Any]:
    return {
        "mission": mission,
        "goal": "Summarise the incident reports of November",
        "budgets": {"money": 50.0, "tokens": 1000000},
        **extra,
    }


# --- common steps -----------------------------------------------------------------------------


def far() -> str:
    return now_text(3600)


def authorized(
    wire: Wire, ww: WorkWorld, work_item: str, mission: str = "m-1", **extra: Any
) -> dict[str, Any]:
    """Create the mission if needed, then ``work.authorize`` the item by ``w1``."""
    if wire.send(ww.w1, "mission.create", mission_create_body(mission)).status_code not in (
        201,
        409,
    ):
        raise AssertionError(f"mission {mission} could not be created")
    return wire.ok(ww.w1, "work.authorize", authorize_body(work_item, mission, **extra))


def owned(
    wire: Wire, ww: WorkWorld, work_item: str, worker: AgentPersona | None = None, **extra: Any
) -> dict[str, Any]:
    """An authorised item offered to ``worker`` (default ``w2``) and accepted: ``queued``."""
    worker = worker or ww.w2
    authorized(wire, ww, work_item, **extra)
    offer = f"{work_item}-o"
    wire.ok(ww.w1, "work.offer", offer_body(work_item, [(offer, worker, far())]))
    revision = wire.item(work_item)["revision"]
    body = {"work_item": work_item, "offer": offer, "contract_revision": revision}
    return wire.ok(worker, "work.accept_offer", body)["result"]


def checked(group: str, work_item: str) -> None:
    """The authority's checks of the item's current submission (R13.2-03 steps 1–2), run as
    its Celery task runs them after the submission commits: acceptance waits for them."""
    reviews.review_submission(tasks.STORE, group, work_item)


def started(
    wire: Wire, ww: WorkWorld, work_item: str, worker: AgentPersona | None = None, **extra: Any
) -> str:
    """An item owned and started by ``worker``: ``active``; returns the lease id."""
    worker = worker or ww.w2
    epoch = owned(wire, ww, work_item, worker, **extra)["ownership_epoch"]
    answer = wire.ok(worker, "work.start", {"work_item": work_item, "ownership_epoch": epoch})
    return answer["result"]["lease"]["lease_id"]
