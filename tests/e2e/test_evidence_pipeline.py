"""The evidence pipeline end to end (issue 11): agents over HTTP, the authority's review in a
real Celery worker, and a rebuild that agrees with what the live system projected.

Processes: a uvicorn serving the product (``tests/live_server.py``) and a ``celery worker
-B`` (``tests/celery_processes.py``), both on this test's PostgreSQL database and the run's
Redis, sharing one artifact folder; no eager mode. The server's hint after ``work.submitted``
goes to the worker's queue, and beat's ``review_submissions`` would find the item anyway.
Every agent is an ``AgentClient`` signing its own commands.
"""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from missionweave.client import AgentClient, ApiError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.signing import document_signature_holds
from missionweave.protocol.work.assessment import INTEGRITY
from tests import factories
from tests.artifacts.servers import server_env
from tests.celery_processes import CeleryProcesses, start_celery
from tests.client.scenario import report_bytes, start_item, worker_evidence
from tests.factories import AgentPersona, World, build_world
from tests.live_server import LiveServer, session_server

__all__ = ["start_celery"]

pytestmark = pytest.mark.e2e

#: how long the authority's review may take to appear (a worker picks the hint up in ms)
REVIEW_TIMEOUT_S = 30.0

#: a review task's success line that recorded evidence (the worker logs what a task returns)
RECORDED_BY_TASK = (
    r"Task apps\.work\.tasks\.review_submissions?\[[^\]]+\] succeeded in [^:]+: "
    r"\{'examined': \d+, 'recorded': [1-9]"
)

StartCelery = Callable[..., AbstractContextManager[CeleryProcesses]]


@pytest.fixture
def artifact_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One artifact folder for the server and the Celery worker: the review re-reads the
    bytes the server stored (R13.2-03 step 1). Set in the environment, which both inherit."""
    folder = tmp_path / "artifacts"
    monkeypatch.setenv("MWP_ARTIFACT_DIR", str(folder))
    return folder


@pytest.fixture
def world(transactional_db: None) -> World:
    """Committed, so the server and the worker see it."""
    return build_world()


@pytest.fixture
def reviewer(world: World) -> AgentPersona:
    """The group's reviewer agent: the default reviewer of R13.2-03 step 3."""
    persona = factories.agent("rv", world.org)
    factories.grant(world.alice, world.group, persona, "reviewer")
    return persona


@pytest.fixture
def pipeline(
    start_celery: StartCelery, artifact_dir: Path, worker_id: str
) -> Iterator[tuple[LiveServer, CeleryProcesses]]:
    """uvicorn and one Celery worker with beat, sharing the queue the server's hints use."""
    queue = f"mwp-test-{worker_id}-{uuid.uuid4().hex[:8]}"
    env = {**server_env(artifact_dir), "MWP_CELERY_QUEUE": queue}
    with (
        start_celery(queue=queue) as processes,
        session_server(worker_id, server="uvicorn", extra_env=env) as server,
    ):
        yield server, processes


def _client(server: LiveServer, persona: AgentPersona) -> AgentClient:
    return AgentClient(server.url, persona.id, persona.key, agent_card_version="1")


def _events(client: AgentClient, group: str) -> list[dict[str, Any]]:
    return client.get_json(f"/groups/{group}/events", params={"after": 0, "limit": 1000})["events"]


def _wait_for(
    client: AgentClient,
    group: str,
    found: Callable[[list[dict[str, Any]]], bool],
    what: str,
    processes: CeleryProcesses,
) -> list[dict[str, Any]]:
    """Poll the group's events (wire.md §4) until ``found`` holds; fail with the workers'
    logs after ``REVIEW_TIMEOUT_S``."""
    deadline = time.monotonic() + REVIEW_TIMEOUT_S
    while True:
        events = _events(client, group)
        if found(events):
            return events
        if time.monotonic() > deadline:
            types = [(e["sequence"], e["type"], e["actor"]) for e in events]
            pytest.fail(f"no {what} within {REVIEW_TIMEOUT_S:g} s; log {types}\n{processes.log()}")
        time.sleep(0.1)


def _authority_evidence(events: list[dict[str, Any]], item: str) -> dict[str, dict[str, Any]]:
    return {
        e["payload"]["criterion"]: e
        for e in events
        if e["type"] == "evidence.recorded"
        and e["payload"]["work_item"] == item
        and e["actor"] == AUTHORITY
    }


def test_a_submission_is_checked_by_the_authority_reviewed_by_an_agent_and_accepted(
    pipeline: tuple[LiveServer, CeleryProcesses], world: World, reviewer: AgentPersona
) -> None:
    """R13.1-03, R13.2-01, R13.2-02, R13.2-03, R13.2-04, R13.2-05 end to end.

    The worker uploads its JSON output, publishes a manifest it signs (R13.1-03) and submits
    it as the contract's ``report`` output with evidence for each criterion (R13.2-02). Its
    claim alone passes nothing (R13.2-01). The Celery worker records the authority's evidence
    — artifact integrity and output schema, then the deterministic criterion's checks — as
    ``evidence.recorded`` by ``authority`` (R13.2-03 steps 1–2), each with subject, criterion,
    method, result, producer, time and artifacts (R13.2-04), and asks the group's reviewer
    agent (step 3); the reviewer reads the output, is refused when its evidence carries private
    reasoning (R13.2-05), then answers. Every criterion of the review passes (step 4), the
    coordinator accepts, and a rebuild from the log agrees with every projection (step 5: the
    results stay on the item).
    """
    server, processes = pipeline
    group = world.group
    with (
        _client(server, world.w1) as coordinator,
        _client(server, world.w2) as worker,
        _client(server, reviewer) as reviewing,
    ):
        active = start_item(coordinator, worker, group)
        item_path = f"/groups/{group}/work-items/{active.work_item}"

        # the worker: upload, publish a signed manifest, submit with the outputs map
        report = worker.upload(report_bytes(), content_type="application/json")
        worker.publish(
            group,
            active.work_item,
            active.lease_id,
            digest=report,
            media_type="application/json",
            sources=[active.input_digest],
            tool_versions={"summariser": "2.1"},
        )
        submitted = worker.submit_work(
            group,
            active.work_item,
            active.lease_id,
            outputs={"report": report},
            evidence=worker_evidence(report),
        )
        assert [e["type"] for e in submitted.events] == ["work.submitted"]
        # R13.2-01: the worker's own "pass" is on record but passes nothing (the authority's
        # checks may already have run: only c2 is certain to wait here)
        submission = coordinator.get_json(item_path)
        claims = {e["criterion"]: e for e in submission["submission"]["evidence"]}
        assert claims["c2"]["result"]["verdict"] == "pass"
        assert claims["c2"]["producer"] == worker.principal
        claimed = submission["review"]["criteria"]["c2"]["status"]
        assert claimed in ("claimed", "awaiting_review"), claimed

        # the authority, in the Celery worker: integrity and the deterministic checks
        events = _wait_for(
            coordinator,
            group,
            lambda evs: {INTEGRITY, "c1"} <= set(_authority_evidence(evs, active.work_item)),
            "authority evidence",
            processes,
        )
        checks = _authority_evidence(events, active.work_item)
        # recorded by the Celery worker (the hint or beat's sweep), which logs it once the
        # task has returned, a moment after the commit that made the events readable
        processes.wait_for(RECORDED_BY_TASK, timeout=10)
        for criterion, event in checks.items():
            payload = event["payload"]
            assert payload["producer"] == AUTHORITY, criterion
            assert payload["method"] == "deterministic", criterion
            assert payload["result"]["verdict"] == "pass", payload["result"]
            assert event["recorded_at"], criterion
        assert checks[INTEGRITY]["payload"]["artifacts"] == [report]
        assert checks[INTEGRITY]["payload"]["result"]["data"]["outputs"] == [
            {"output": "report", "valid": True}
        ]
        assert checks["c1"]["payload"]["artifacts"] == [report]
        assert [
            c["data"]["check"] for c in checks["c1"]["payload"]["result"]["data"]["checks"]
        ] == [
            "digest_present",
            "json_path_equals",
            "json_path_within",
        ]
        published = next(e for e in events if e["type"] == "artifact.published")
        assert published["payload"]["signed_by"] == worker.principal
        assert document_signature_holds(world.w2.key.public_key(), published["payload"]["manifest"])

        # the review request names the group's reviewer agent
        events = _wait_for(
            coordinator,
            group,
            lambda evs: any(e["type"] == "review.requested" for e in evs),
            "review.requested",
            processes,
        )
        request = next(e for e in events if e["type"] == "review.requested")
        assert request["actor"] == AUTHORITY
        assert request["payload"]["reviewer"] == reviewing.principal
        assert request["payload"]["criteria"] == ["c2"]
        waiting = coordinator.get_json(item_path)["review"]["criteria"]["c2"]["status"]
        assert waiting == "awaiting_review"

        # the reviewer reads the output (the log now references it) and answers
        assert reviewing.download(report) == report_bytes()
        answer = {
            "work_item": active.work_item,
            "submission": request["payload"]["submission"],
            "criterion": "c2",
            "method": "agent_review",
            "result": {
                "verdict": "pass",
                "summary": "Findings match the sources",
                "data": {"sources_read": 1},
            },
            "producer": reviewing.principal,
            "artifacts": [report],
        }
        leaking = {**answer, "result": {**answer["result"], "data": {"reasoning": "I think"}}}
        with pytest.raises(ApiError) as refused:
            reviewing.submit(group, "evidence.record", leaking)
        assert (refused.value.code, refused.value.requirement) == ("MALFORMED", "R13.2-05")
        recorded = reviewing.submit(group, "evidence.record", answer)
        assert [e["type"] for e in recorded.events] == ["evidence.recorded"]

        review = coordinator.get_json(item_path)["review"]
        assert {name: c["status"] for name, c in review["criteria"].items()} == {
            INTEGRITY: "pass",
            "c1": "pass",
            "c2": "pass",
        }
        assert review["pending_checks"] == []
        assert review["requests"][0]["answered"] == ["c2"]

        # the coordinator accepts on the combined evidence
        accepted = coordinator.submit(
            group,
            "work.accept_result",
            {
                "work_item": active.work_item,
                "review": {
                    "verdicts": [
                        {"criterion": "c1", "verdict": "pass", "note": "authority checks pass"},
                        {"criterion": "c2", "verdict": "pass", "note": "reviewer agrees"},
                    ],
                    "summary": "Every criterion is met.",
                },
            },
        )
        assert [e["type"] for e in accepted.events] == ["work.result_accepted"]
        final = coordinator.get_json(item_path)
        assert final["state"] == "verified"
        assert {c["status"] for c in final["review"]["criteria"].values()} == {"pass"}

    out = io.StringIO()
    call_command("rebuild_projections", "--verify", stdout=out, stderr=io.StringIO())
