"""The product's reason to exist, end to end in Chromium (issue 12, "Must hold"):

a risk-gated WorkItem waits in two mission owners' inboxes; both approve it (quorum 2,
R10.2-06); the worker — an ``AgentClient`` over HTTP — starts it, uploads its report,
publishes a signed manifest and submits (R13.1-03, R13.2-02); the authority's checks run in
a real Celery worker (R13.2-03 steps 1–2); the reviewer walks each criterion with the
keyboard alone, records verdicts and accepts (R10.2-12); the owner approves the mission
from its final-approval screen (R10.2-16). Meanwhile other people's pages stay open, and
each must show what changed within a second, without a reload.

Processes: uvicorn serving the product and a ``celery worker -B``, on this test's
PostgreSQL database and the run's Redis, sharing one artifact folder; no eager mode.
Every screen visited is shot under ``var/screenshots/``, checked with axe-core and at 400 px.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, BrowserContext, Page, expect

from missionweave.client import AgentClient
from tests.artifacts.servers import server_env
from tests.celery_processes import CeleryProcesses, start_celery
from tests.client.scenario import (
    INPUT_BYTES,
    evidence_contract,
    report_bytes,
    worker_evidence,
)
from tests.e2e.screens import check_screen, snap, watch_csp
from tests.factories import HumanPersona, World, build_world, grant, human, mission_body, now_text
from tests.live_server import LiveServer, session_server
from tests.work.lifecycle import selection_basis

__all__ = ["start_celery"]

StartCelery = Callable[..., AbstractContextManager[CeleryProcesses]]

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
#: "every other open page updates within a second without a reload"
LIVE_MS = 1_000
#: the authority's review runs in the Celery worker after the submission commits
REVIEW_MS = 30_000


@dataclass
class Cast:
    world: World
    omar: HumanPersona  # a second mission owner: quorum 2
    rita: HumanPersona  # reviewer and mission owner: may accept a human_review result


def _with_password(persona: HumanPersona) -> HumanPersona:
    user = get_user_model().objects.get(username=persona.username)
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return persona


@pytest.fixture
def cast(transactional_db: None, settings: object) -> Cast:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    _with_password(world.olga)
    omar = _with_password(human("omar"))
    rita = _with_password(human("rita"))
    grant(world.alice, world.group, omar, "mission_owner")
    grant(world.alice, world.group, rita, "reviewer", "mission_owner")
    return Cast(world, omar, rita)


@pytest.fixture
def artifact_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "artifacts"
    monkeypatch.setenv("MWP_ARTIFACT_DIR", str(folder))
    return folder


@pytest.fixture
def stack(start_celery: StartCelery, artifact_dir: Path, worker_id: str) -> Iterator[LiveServer]:
    """uvicorn and one Celery worker with beat, sharing the queue the server's hints use."""
    queue = f"mwp-test-{worker_id}-{uuid.uuid4().hex[:8]}"
    env = {**server_env(artifact_dir), "MWP_CELERY_QUEUE": queue}
    with (
        start_celery(queue=queue),
        session_server(worker_id, server="uvicorn", extra_env=env) as server,
    ):
        yield server


def _signed_in(browser: Browser, server: LiveServer, persona: HumanPersona) -> Page:
    context: BrowserContext = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    watch_csp(context)
    page = context.new_page()
    page.goto(f"{server.url}/login/")
    page.get_by_label("Username").fill(persona.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{server.url}/")
    return page


def _gated_review_contract(input_digest: str) -> dict[str, object]:
    """The evidence contract of the client scenario, gated behind two mission owners'
    approvals (R10.2-06), whose second criterion a person judges (``human_review``)."""
    contract = evidence_contract(input_digest)
    contract["risk"] = {
        "class": "high",
        "requires_execution_approval": True,
        "approvals_required": 2,
    }
    criteria = contract["acceptance_criteria"]
    assert isinstance(criteria, list)
    criteria[1] = {
        "id": "c2",
        "description": "Accurate and neutral, as a person reads it",
        "method": "human_review",
        "evidence": ["review"],
    }
    return contract


def test_approve_execute_review_and_approve_a_mission_in_the_browser(
    cast: Cast, stack: LiveServer, browser: Browser
) -> None:
    world = cast.world
    group = world.group
    coordinator = AgentClient(stack.url, world.w1.id, world.w1.key, agent_card_version="1")
    worker = AgentClient(stack.url, world.w2.id, world.w2.key, agent_card_version="1")
    with coordinator, worker:
        # --- the coordinator hands out risk-gated work; the worker accepts it -----------------
        input_digest = coordinator.upload(INPUT_BYTES, content_type="text/plain")
        mission = f"m-{uuid.uuid4().hex[:6]}"
        item = f"wi-{uuid.uuid4().hex[:6]}"
        coordinator.submit(group, "mission.create", mission_body(mission))
        coordinator.submit(
            group,
            "work.authorize",
            {
                "work_item": item,
                "mission": mission,
                "contract": _gated_review_contract(input_digest),
                "depends_on": [],
            },
        )
        offer = f"{item}-o1"
        coordinator.submit(
            group,
            "work.offer",
            {
                "work_item": item,
                "offers": [
                    {"offer": offer, "worker": worker.principal, "expires_at": now_text(3600)}
                ],
                "mode": "sequential",
                "selection_basis": selection_basis(),
            },
        )
        accepted = worker.submit(
            group, "work.accept_offer", {"work_item": item, "offer": offer, "contract_revision": 1}
        )
        epoch = accepted.body["result"]["ownership_epoch"]

        # --- two owners' inboxes show it; both approve (quorum 2) ------------------------------
        olga = _signed_in(browser, stack, world.olga)
        omar = _signed_in(browser, stack, cast.omar)
        rita = _signed_in(browser, stack, cast.rita)
        waiting = olga.locator(f"#inbox-approvals [data-work-item='{item}']")
        expect(waiting).to_contain_text("0 of 2 approvals")
        check_screen(olga, "journey-01-inbox-owner")
        omar_entry = omar.locator(f"#inbox-approvals [data-work-item='{item}']")
        expect(omar_entry).to_contain_text("0 of 2 approvals")

        rita.goto(f"{stack.url}/reviews/")
        expect(rita.locator("#review-queue-empty")).to_be_visible()

        olga.goto(f"{stack.url}/groups/{group}/work-items/{item}/approval/")
        expect(
            olga.get_by_role("heading", name="What you approve: contract revision 1")
        ).to_be_visible()
        check_screen(olga, "journey-02-approval-screen")
        olga.get_by_label("Comment on approving (optional)").fill("Inputs checked; fine to run.")
        olga.get_by_role("button", name="Approve revision 1").click()
        expect(olga.locator("#decisions")).to_contain_text("Inputs checked; fine to run.")

        # omar's inbox, open all along, shows the first grant without a reload
        expect(omar_entry).to_contain_text("1 of 2 approvals", timeout=LIVE_MS)
        omar.goto(f"{stack.url}/groups/{group}/work-items/{item}/approval/")
        expect(omar.locator("#decisions")).to_contain_text("Inputs checked; fine to run.")
        omar.get_by_label("Comment on approving (optional)").fill("Second pair of eyes: yes.")
        omar.get_by_role("button", name="Approve revision 1").click()
        expect(omar.locator("#decisions")).to_contain_text("Second pair of eyes: yes.")
        snap(omar, "journey-03-approved-by-quorum")

        # --- the worker executes and submits; the authority checks it in Celery -----------------
        olga.goto(f"{stack.url}/groups/{group}/missions/{mission}/")
        expect(olga.locator("#mission-body")).to_contain_text(item)
        started = worker.submit(group, "work.start", {"work_item": item, "ownership_epoch": epoch})
        lease = started.body["result"]["lease"]["lease_id"]
        report = worker.upload(report_bytes(), content_type="application/json")
        worker.publish(
            group,
            item,
            lease,
            digest=report,
            media_type="application/json",
            sources=[input_digest],
            tool_versions={"summariser": "2.1"},
        )
        evidence = worker_evidence(report)
        evidence[1]["method"] = "human_review"  # the criterion's own method (R13.2-04)
        worker.submit_work(group, item, lease, outputs={"report": report}, evidence=evidence)
        # rita's queue, open all along, shows the submission without a reload
        expect(rita.locator(f"#review-queue [data-work-item='{item}']")).to_be_visible(
            timeout=LIVE_MS
        )
        check_screen(rita, "journey-04-review-queue")

        # --- the reviewer walks each criterion with the keyboard and accepts --------------------
        rita.keyboard.press("Tab")  # the page starts without focus: reach the button by keys
        start = rita.locator("#start-reviewing")
        start.focus()
        rita.keyboard.press("Enter")
        expect(rita).to_have_url(
            f"{stack.url}/groups/{group}/work-items/{item}/review/#criterion-c1"
        )
        expect(rita.locator("#reservation")).to_contain_text("Reserved for you")
        # the authority's integrity check arrives live from the Celery worker
        expect(rita.locator(".review-integrity .status")).to_have_text("pass", timeout=REVIEW_MS)
        check_screen(rita, "journey-05-review-criterion-1")
        rita.keyboard.press("?")
        expect(rita.locator("#review-keys")).to_be_visible()
        snap(rita, "journey-06-review-keys")
        rita.keyboard.press("Escape")
        rita.keyboard.press("p")  # c1 passes
        rita.keyboard.press("j")
        expect(rita.locator("#criterion-c2")).to_be_visible()
        expect(rita.locator("#criterion-c1")).to_be_hidden()
        rita.keyboard.press("p")  # c2 passes
        rita.keyboard.press("e")
        rita.keyboard.type("Read it against the sources: neutral and accurate.")
        rita.keyboard.press("Escape")
        expect(rita.locator("#review-progress")).to_have_text("2 of 2 judged")
        # drafts survive a reload
        rita.reload()
        expect(rita.locator("#review-progress")).to_have_text("2 of 2 judged")
        expect(rita.locator("#note-c2")).to_have_value(
            "Read it against the sources: neutral and accurate."
        )
        snap(rita, "journey-07-review-criterion-2")
        rita.locator("#accept-result").focus()
        rita.keyboard.press("Enter")
        expect(rita.locator("#flash")).to_contain_text("Accepted the result")

        # olga's mission page, open all along, shows the item verified without a reload
        node = olga.locator(f"#mission-body .graph__node[data-work-item='{item}']")
        expect(node).to_have_attribute("data-state", "verified", timeout=LIVE_MS)
        expect(olga.locator("#mission-body li[data-state='verified']")).to_contain_text("1")
        check_screen(olga, "journey-08-mission-page")

        # --- the owner reads every retained review and approves the mission ---------------------
        olga.goto(f"{stack.url}/groups/{group}/missions/{mission}/final-approval/")
        expect(olga.locator("body")).to_contain_text(
            "Read it against the sources: neutral and accurate."
        )
        check_screen(olga, "journey-09-final-approval")
        comment = olga.get_by_label("Comment (kept with the approval, optional)")
        comment.fill("Mission delivered as asked.")
        olga.get_by_role("button", name="Approve this mission").click()
        expect(olga.locator("#flash")).to_contain_text(
            "Approved the mission “Summarise the incident reports of November”"
        )
        snap(olga, "journey-10-mission-approved")

        # omar's inbox no longer lists anything for this mission
        omar.goto(f"{stack.url}/")
        expect(omar.locator(f"[data-mission='{mission}']")).to_have_count(0)
