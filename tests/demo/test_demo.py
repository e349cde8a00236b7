"""``manage.py demo --no-serve`` and the live loop: demo data through the real services and
write path, WorkItems in each state, and a loop that moves them."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client

from apps.artifacts.models import GroupArtifact
from apps.demo import cast, story
from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.registry.models import Agent, AgentKey, AgentSession
from apps.registry.services import api_token_create, authenticate_bearer, memberships_of
from apps.work import reviews
from apps.work.models import Mission, WorkItem
from apps.work.tasks import STORE
from missionweave.protocol.errors import ErrorCode, ProtocolError

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
REVIEWER = f"agent:{cast.REVIEWER}"
DEMO_ACTORS = {
    "user:admin",
    "authority",  # its checks of each submission and its review requests (R13.2-03)
    f"agent:{cast.COORDINATOR}",
    *(f"agent:{worker}" for worker in cast.WORKERS),
    REVIEWER,
}


def seed(keys_dir) -> str:
    out = io.StringIO()
    call_command("demo", "--no-serve", "--keys-dir", str(keys_dir), stdout=out)
    return out.getvalue()


def head() -> int:
    return GroupLog.objects.get(group_id=cast.GROUP).head_sequence


def states() -> dict[str, str]:
    return dict(WorkItem.objects.filter(group_id=cast.GROUP).values_list("work_item_id", "state"))


def item(work_item: str) -> dict:
    return WorkItem.objects.get(group_id=cast.GROUP, work_item_id=work_item).data


def verify() -> None:
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())


def world(keys_dir) -> cast.DemoWorld:
    built = cast.demo_seed(keys_dir=keys_dir, password="pw")
    story.seed_work(built)
    return built


def play(built: cast.DemoWorld, ticks: int, seed_: int = 7) -> list[str]:
    """``ticks`` beats of the live loop, each followed by what the demo's Celery worker does
    between beats: the authority's review of each new submission (R13.2-03 steps 1-3)."""
    rng = random.Random(seed_)
    lines: list[str] = []
    for _ in range(ticks):
        lines += story.tick(built, rng)
        reviews.review_owing(STORE)
    return lines


def test_demo_seeds_group_members_sessions_and_missions_through_the_write_path(tmp_path):
    """wire§4: memberships, missions and work are events in g-demo's log, sessions are open."""
    seed(tmp_path)

    assert memberships_of("user:admin")[cast.GROUP]["roles"] == ["admin", "mission_owner"]
    assert memberships_of(f"agent:{cast.COORDINATOR}")[cast.GROUP]["roles"] == ["coordinator"]
    for worker in cast.WORKERS:
        assert memberships_of(f"agent:{worker}")[cast.GROUP]["roles"] == ["worker"]
        assert AgentSession.objects.filter(agent_id=worker).count() == 1
    assert memberships_of(REVIEWER)[cast.GROUP]["roles"] == ["reviewer"]
    for person in cast.PEOPLE:
        assert memberships_of(person.principal)[cast.GROUP]["roles"] == sorted(person.roles)

    events = list(
        Event.objects.filter(group_id=cast.GROUP).order_by("sequence").values_list("type", "actor")
    )
    missions, grants = len(cast.SEED_MISSIONS), 5 + len(cast.PEOPLE)
    assert events[:grants] == [("membership.granted", "user:admin")] * grants
    assert (
        events[grants : grants + missions]
        == [("mission.created", f"agent:{cast.COORDINATOR}")] * missions
    )
    assert {actor for _type, actor in events} == DEMO_ACTORS - {REVIEWER}  # nothing to review
    assert head() == len(events)
    assert set(
        Mission.objects.filter(group_id=cast.GROUP).values_list("mission_id", flat=True)
    ) >= {mission_id for mission_id, _ in cast.SEED_MISSIONS}
    verify()


def test_demo_seeds_work_items_in_each_state_of_the_story(tmp_path):
    """R10.2-02..16: verified, active, queued for approval, waiting on a dependency, blocked by
    a child mission — each reached through the write path."""
    seed(tmp_path)

    assert states() == {
        story.SUMMARY: "verified",
        story.TRANSLATE: "active",
        story.PROOFREAD: "open",
        story.COLLECT: "queued",
        story.TERMS: "blocked",
        story.CHILD_ITEM: "open",
        story.EXPORT: "submitted",
        story.REVOKE: "queued",
    }
    summary = item(story.SUMMARY)
    assert [o["status"] for o in summary["offers"]] == ["accepted", "withdrawn"]  # urgent race
    assert summary["submission"]["evidence"]
    assert summary["submission"]["outputs"] == {story.OUTPUT: summary["submission"]["artifacts"][0]}
    # R13.2-03: the authority checked it (integrity, then c1's checks), the admin judged c2
    assert [(e["criterion"], e["producer"]) for e in summary["evidence"]] == [
        ("authority:integrity", "authority"),
        ("c1", "authority"),
        ("c2", "user:admin"),
    ]
    assert {c["status"] for c in summary["review"]["criteria"].values()} == {"pass"}
    assert ("work.result_accepted", "user:admin") in {
        (entry["type"], entry["actor"]) for entry in summary["history"]
    }
    assert item(story.TRANSLATE)["lease"]["status"] == "active"
    assert item(story.PROOFREAD)["depends_on"] == [story.TRANSLATE]
    collect = item(story.COLLECT)
    assert collect["contract"]["risk"]["requires_execution_approval"] is True
    assert collect["approvals"] == []
    assert collect["authorized_by"] == f"agent:{cast.COORDINATOR}"  # so the admin may approve
    assert item(story.TERMS)["child"]["status"] == "running"
    # R10.2-06: two mission owners must approve REVOKE; the coordinator asked, so any two of
    # the demo's people may
    revoke = item(story.REVOKE)
    assert revoke["contract"]["risk"] == {
        "class": "high",
        "requires_execution_approval": True,
        "approvals_required": 2,
    }
    assert (revoke["approvals"], revoke["authorized_by"]) == ([], f"agent:{cast.COORDINATOR}")
    assert revoke["start_window_s"] == story.REVOKE_START_WINDOW_S
    # R13.2-03: EXPORT's checks passed; its human_review criterion waits for a person
    export = item(story.EXPORT)
    assert {n: c["status"] for n, c in export["review"]["criteria"].items()} == {
        "authority:integrity": "pass",
        "c1": "pass",
        "c2": "claimed",
    }
    child = Mission.objects.get(group_id=cast.GROUP, mission_id=story.CHILD_MISSION)
    assert child.parent == "demo-m-pricing"
    assert child.work_items == [story.CHILD_ITEM]
    verify()


def test_demo_seeding_twice_replays_its_commands_and_still_verifies(tmp_path):
    """wire§3 step 5: the seed commands replay from their idempotency records the second time;
    R11.3-10: the only new events are the revocations of the leases the replaced sessions
    held, whose items wait in ``queued`` for the new runtime."""
    seed(tmp_path)
    first_head = head()
    first_keys = AgentKey.objects.count()
    first_records = CommandRecord.objects.filter(group_id=cast.GROUP).count()
    first_states = states()

    seed(tmp_path)

    new_events = list(
        Event.objects.filter(group_id=cast.GROUP, sequence__gt=first_head).values_list(
            "type", "actor"
        )
    )
    assert set(new_events) <= {("lease.revoked", "authority")}
    assert head() == first_head + len(new_events)
    assert AgentKey.objects.count() == first_keys  # the same keys, read back from keys_dir
    records = CommandRecord.objects.filter(group_id=cast.GROUP)
    assert records.count() == first_records + len(new_events)  # the authority's revocations
    revoked = {
        row.work_item_id
        for row in WorkItem.objects.filter(group_id=cast.GROUP)
        if row.data["lease"] and row.data["lease"]["closed_by"] == "lease.revoked"
    }
    assert len(revoked) == len(new_events)
    assert all(first_states[w] == "active" for w in revoked)
    assert states() == {**first_states, **dict.fromkeys(revoked, "queued")}
    # each run opens a new session: the coordinator is at session epoch 2
    assert Agent.objects.get(pk=cast.COORDINATOR).session_epoch == 2
    verify()


def test_demo_admin_can_sign_in_and_use_the_printed_api_token(tmp_path, monkeypatch):
    """The banner's login and token work; the password comes from MWP_DEMO_PASSWORD."""
    monkeypatch.setenv("MWP_DEMO_PASSWORD", "a-demo-password-for-tests")
    output = seed(tmp_path)

    assert authenticate(username="admin", password="a-demo-password-for-tests") is not None
    for person in cast.PEOPLE:  # printed with the admin, with the same password
        assert authenticate(username=person.username, password="a-demo-password-for-tests")
        assert re.search(rf"^ +{person.username} +\(", output, re.MULTILINE), output
    token = next(line.split()[-1] for line in output.splitlines() if "API token:" in line)
    caller = authenticate_bearer(token).caller
    assert (caller.principal, caller.is_staff) == ("user:admin", True)


def test_live_ticks_move_work_to_verified_without_refusals(tmp_path):
    """R10.2-03..12: the loop offers, accepts, starts, reports, submits and accepts results
    with signed commands; nothing it sends is refused but the expected urgent-race losers."""
    built = world(tmp_path)
    before = head()

    lines = play(built, 40)

    assert head() > before
    assert not [line for line in lines if line.startswith("  refused")], lines
    live = {
        row.work_item_id: row.state
        for row in WorkItem.objects.filter(group_id=cast.GROUP, mission__startswith="m-")
    }
    assert "verified" in live.values(), lines
    assert states()[story.TRANSLATE] == "verified"  # the seeded active item finished
    assert states()[story.COLLECT] == "queued"  # still waiting for a person
    assert states()[story.REVOKE] == "queued"  # still waiting for two people
    assert states()[story.EXPORT] == "submitted"  # still waiting for a person's review
    assert {e["producer"] for e in item(story.EXPORT)["evidence"]} == {"authority"}
    assert states()[story.TERMS] == "blocked"  # still waiting for its child mission
    types = set(
        Event.objects.filter(group_id=cast.GROUP, sequence__gt=before).values_list(
            "type", flat=True
        )
    )
    assert {"mission.created", "work.authorized", "work.offered", "work.offer_accepted",
            "work.started", "work.progress_reported", "artifact.published", "work.submitted",
            "evidence.recorded", "review.requested", "work.result_accepted"} <= types  # fmt: skip
    # R13.1-03, R13.2-03: each verified live result was published with a manifest its worker
    # signed, checked by the authority, reviewed by the reviewer agent, and only then accepted
    for row in WorkItem.objects.filter(group_id=cast.GROUP, mission__startswith="m-"):
        if row.state != "verified":
            continue
        review = row.data["review"]
        assert {c["status"] for c in review["criteria"].values()} == {"pass"}, review
        producers = {e["producer"] for e in row.data["evidence"]}
        assert producers == {"authority", REVIEWER}, row.data["evidence"]
        report = row.data["submission"]["outputs"][story.OUTPUT]
        published = GroupArtifact.objects.get(group_id=cast.GROUP, digest=report).data
        assert published["signed_by"] == row.data["owner"]
        assert published["manifest"]["sources"] == [
            ref["ref"] for ref in row.data["contract"]["inputs"]
        ]
    assert (
        set(
            Event.objects.filter(group_id=cast.GROUP, sequence__gt=before).values_list(
                "actor", flat=True
            )
        )
        <= DEMO_ACTORS
    )
    verify()


def test_admin_approval_lets_the_loop_start_the_gated_item(tmp_path):
    """R10.2-06: the coordinator authorised it, so the human admin's grant is no SELF_APPROVAL;
    with it the owner starts the item on the next beat."""
    built = world(tmp_path)
    assert play(built, 1) is not None
    assert states()[story.COLLECT] == "queued"

    granted = cast.submit_as_admin(
        "admin",
        "approval.grant_execution",
        {"work_item": story.COLLECT, "contract_revision": 1, "comment": "go ahead"},
        command_id=f"test-{uuid.uuid4().hex}",
    )
    play(built, 1)

    assert granted.body["result"] == {"approvals": 1, "approvals_required": 1}
    assert states()[story.COLLECT] == "active"
    assert item(story.COLLECT)["owner"] == f"agent:{cast.WORKERS[0]}"

    # REVOKE still waits for two of the demo's people (R10.2-06): one is not enough
    for number, person in enumerate(cast.PEOPLE[:2], start=1):
        assert states()[story.REVOKE] == "queued"
        outcome = cast.submit_as_admin(
            person.username,
            "approval.grant_execution",
            {"work_item": story.REVOKE, "contract_revision": 1, "comment": "reviewed the list"},
            command_id=f"test-{uuid.uuid4().hex}",
        )
        assert outcome.body["result"] == {"approvals": number, "approvals_required": 2}
        play(built, 1)
    assert states()[story.REVOKE] == "active"

    def gated() -> list[dict]:
        return [
            row.data
            for row in WorkItem.objects.filter(group_id=cast.GROUP, mission__startswith="m-")
            if row.data["contract"]["risk"]["requires_execution_approval"]
        ]

    # the queue is empty now: the next live mission refills it, once it has been offered
    for beat in range(30):
        play(built, 1, seed_=beat)
        if any(data["state"] == "queued" for data in gated()):
            break
    assert len(gated()) == 1
    assert (gated()[0]["state"], gated()[0]["approvals"]) == ("queued", [])
    verify()


def test_a_new_run_continues_from_the_projections(tmp_path):
    """wire§3 step 5: after live beats, a second run replays the seed, opens new sessions and
    the loop carries on: fresh command ids, no duplicates, projections equal a rebuild.
    R11.3-10: each new session revokes the leases of the one it replaced, so the only
    refusals are the two runs' agents finding their item re-queued or their lease gone."""
    built = world(tmp_path)
    play(built, 12)
    moved = head()

    again = world(tmp_path)  # another ``manage.py demo``: new sessions, the seed replays
    revocations = Event.objects.filter(group_id=cast.GROUP, sequence__gt=moved)
    assert set(revocations.values_list("type", flat=True)) <= {"lease.revoked"}
    lines = play(again, 12, seed_=8)
    lines += play(built, 3, seed_=9)  # the old run's agents: their sessions were replaced

    assert head() > moved
    refused = [line for line in lines if line.startswith("  refused")]
    assert all("ILLEGAL_TRANSITION" in line or "STALE_LEASE" in line for line in refused), lines
    assert not CommandRecord.objects.filter(group_id=cast.GROUP, status__gte=400).exists()
    verify()


def test_live_commands_reopen_a_session_another_run_replaced(tmp_path):
    """R11.3-10: a command refused as STALE_SESSION is sent again on a reopened session."""
    built = world(tmp_path)
    cast.open_session(cast.DemoAgent(cast.COORDINATOR, built.coordinator.key))  # "another run"
    before = head()

    outcome = cast.submit_as_agent(
        built.coordinator,
        "mission.create",
        cast.mission_body("m-reopened", "After a newer session"),
        command_id="live-reopened",
    )

    assert outcome.status == 201
    assert head() == before + 1
    assert Event.objects.get(group_id=cast.GROUP, sequence=head()).actor == (
        f"agent:{cast.COORDINATOR}"
    )
    assert built.coordinator.session_epoch == Agent.objects.get(pk=cast.COORDINATOR).session_epoch


def test_a_refused_live_command_is_reported_not_raised(tmp_path):
    """wire§8: the loop reports a refusal with its code and carries on."""
    built = world(tmp_path)
    step = story.Step(
        f"agent:{cast.WORKERS[1]}",
        "work.start",
        {"work_item": story.COLLECT, "ownership_epoch": 1},
    )
    before = head()

    line = story.run(built, step)

    assert line.startswith("  refused")
    assert ErrorCode.FORBIDDEN.value in line
    assert head() == before
    with pytest.raises(ProtocolError):  # the same command outside the loop is raised
        cast.submit_as_agent(built.workers[1], step.type, step.body, command_id="direct")


def inbox_entries(username: str, section: str) -> list[str]:
    """The WorkItems (or missions) in ``section`` of ``username``'s inbox, as rendered."""
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    html = client.get("/").content.decode()
    start = html.index(f'id="inbox-{section}"')
    end = html.index("</section>", start)
    return re.findall(r'data-mission="([^"]*)"(?: data-work-item="([^"]*)")?', html[start:end])


def test_each_person_of_the_demo_finds_their_work_in_the_inbox(tmp_path):
    """R10.2-06, R13.2-03, R10.2-16: REVOKE (two approvals) waits in both mission owners'
    inboxes and rita's; EXPORT waits for a person's review in rita's; the incidents mission,
    all of its work verified, waits for a mission owner's final approval."""
    seed(tmp_path)
    revoke = ("demo-m-access", story.REVOKE)
    for username in ("olivia", "omar", "rita", "admin"):
        assert revoke in inbox_entries(username, "approvals"), username
    assert ("demo-m-access", story.EXPORT) in inbox_entries("rita", "reviews")
    assert ("demo-m-incidents", "") in inbox_entries("olivia", "missions")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str, token: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as answer:
        return json.loads(answer.read())


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)  # the server process must see the committed token
def test_demo_serves_the_api_and_keeps_work_moving(tmp_path):
    """wire§4: ``manage.py demo`` serves /api/v1 with daphne and moves work live."""
    if not os.environ.get("DATABASE_URL"):
        pytest.fail("the served demo shares the test database through DATABASE_URL")
    token = api_token_create(username="admin", staff=True)  # committed: the server sees it
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "MWP_TEST_DB_NAME": connection.settings_dict["NAME"],
        "MWP_CHANNEL_PREFIX": f"demo-{uuid.uuid4().hex[:8]}",
        "MWP_VAR_DIR": str(tmp_path / "var"),
    }
    command = [sys.executable, "manage.py", "demo", "--port", str(port), "--interval", "0.3"]
    command += ["--keys-dir", str(tmp_path / "keys")]
    log = (tmp_path / "demo.log").open("w+")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        heads: list[int] = []
        while len(set(heads)) < 3 and time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "demo.log").read_text()
            with contextlib.suppress(urllib.error.URLError, ConnectionError):  # not up yet
                heads.append(_get(f"{base}/api/v1/groups/g-demo/head", token)["sequence"])
            time.sleep(0.3)
        assert _get(f"{base}/api/v1/authority")["protocol"] == "mwp/1"
        page = _get(f"{base}/api/v1/groups/g-demo/events?after={heads[0]}", token)
    finally:
        server.terminate()
        server.wait(timeout=30)
    output = (tmp_path / "demo.log").read_text()
    assert len(set(heads)) >= 3, output  # the head kept moving while it served
    assert heads == sorted(heads)
    assert page["events"], output
    assert {e["actor"] for e in page["events"]} <= DEMO_ACTORS, output
    assert any(e["type"].startswith("work.") for e in page["events"]), output
    assert server.returncode == 0, output
    assert "Demo stopped." in output
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())
