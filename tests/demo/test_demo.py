"""``manage.py demo``: demo data through the real services and write path, WorkItems in each
state (``--no-serve``), and the served demo with its organisation of agent processes."""

from __future__ import annotations

import contextlib
import http.cookiejar
import io
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from apps.demo import cast, story
from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.registry.models import Agent, AgentKey, AgentSession
from apps.registry.services import authenticate_bearer, memberships_of
from apps.work.models import Mission, WorkItem
from missionweave.demo import organisation
from tests.dashboard.conftest import password_login
from tests.demo.launch import launched_demo

pytestmark = pytest.mark.django_db
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


def test_demo_seeds_group_members_sessions_and_missions_through_the_write_path(tmp_path):
    """wire§4: memberships, missions and work are events in g-demo's log, sessions are open;
    the organisation's agents hold their roles in both groups."""
    seed(tmp_path)

    assert memberships_of("user:admin")[cast.GROUP]["roles"] == ["admin", "mission_owner"]
    assert memberships_of(f"agent:{cast.COORDINATOR}")[cast.GROUP]["roles"] == ["coordinator"]
    for spec in organisation.AGENTS:  # the organisation's roles, in both groups
        held = memberships_of(f"agent:{spec.id}")
        assert {g: held[g]["roles"] for g in held} == {g: list(r) for g, r in spec.roles.items()}
        assert AgentSession.objects.filter(agent_id=spec.id).count() == 1
    for person in cast.PEOPLE:
        for group in organisation.GROUPS:
            assert memberships_of(person.principal)[group]["roles"] == sorted(person.roles)

    events = list(
        Event.objects.filter(group_id=cast.GROUP).order_by("sequence").values_list("type", "actor")
    )
    missions, grants = len(cast.SEED_MISSIONS), 5 + len(cast.PEOPLE)
    assert events[:grants] == [("membership.granted", "user:admin")] * grants
    assert (
        events[grants : grants + missions]
        == [("mission.created", f"agent:{cast.COORDINATOR}")] * missions
    )
    # nothing to review yet, and worker 3 serves the lab only
    assert {actor for _type, actor in events} == DEMO_ACTORS - {REVIEWER, "agent:demo-worker-3"}
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

    # through the login form, as a person signs in (django-axes counts every attempt there)
    assert password_login(Client(), "admin", "a-demo-password-for-tests")
    for person in cast.PEOPLE:  # printed with the admin, with the same password
        assert password_login(Client(), person.username, "a-demo-password-for-tests")
        assert re.search(rf"^ +{person.username} +\(", output, re.MULTILINE), output
    token = next(line.split()[-1] for line in output.splitlines() if "API token:" in line)
    caller = authenticate_bearer(token).caller
    assert (caller.principal, caller.is_staff) == ("user:admin", True)


def test_seed_commands_reopen_a_session_another_run_replaced(tmp_path):
    """R11.3-10: a command refused as STALE_SESSION is sent again on a reopened session (the
    agents' own processes replace the seed's sessions when they start)."""
    built = world(tmp_path)
    cast.DemoAgent(cast.COORDINATOR, built.coordinator.key).open_session()  # "another run"
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


def _get(url: str, token: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as answer:
        return json.loads(answer.read())


def _events(base: str, token: str, group: str) -> list[dict]:
    """Every event of ``group`` so far, page by page (wire.md §4)."""
    events: list[dict] = []
    while True:
        page = _get(f"{base}/api/v1/groups/{group}/events?after={len(events)}&limit=1000", token)
        events += page["events"]
        if not page["events"]:
            return events


def _agents_did_the_work(events: dict[str, list[dict]]) -> bool:
    """A live mission's WorkItem went the whole way by the agents' hands, in each group."""
    done = {
        group: {(e["type"], e["actor"].split(":")[0]) for e in group_events}
        for group, group_events in events.items()
    }
    needed = {
        ("work.offered", "agent"),
        ("work.offer_accepted", "agent"),
        ("work.started", "agent"),
        ("work.schedule_disclosed", "agent"),
        ("work.progress_reported", "agent"),
        ("artifact.published", "agent"),
        ("work.submitted", "agent"),
        ("evidence.recorded", "agent"),
        ("work.result_accepted", "agent"),
    }
    return all(needed <= done[group] for group in done)


@pytest.mark.e2e
def test_make_demo_runs_the_organisation_as_agents_on_the_embedded_default(tmp_path):
    """Issue 14 §8, wire§4: ``manage.py demo`` on the embedded default (SQLite, no servers)
    serves the product and starts the organisation as separate processes — a coordinator,
    three ``missionweave-worker`` runtimes and a reviewer, talking HTTP and websockets — and
    in both groups work is offered, accepted, started, disclosed, reported, published,
    submitted, reviewed and accepted by them. SIGTERM stops everything cleanly (every agent
    exits 0) and the projections equal a rebuild from the log."""
    events: dict[str, list[dict]] = {}
    with launched_demo(tmp_path) as launched:
        base, demo = launched.base, launched.process
        deadline = time.monotonic() + 240
        token = ""
        while time.monotonic() < deadline:
            assert demo.poll() is None, launched.output()
            time.sleep(1)
            token = token or launched.token()
            if not token:
                continue
            with contextlib.suppress(urllib.error.URLError, ConnectionError):  # not up yet
                events = {g: _events(base, token, g) for g in organisation.GROUPS}
                if _agents_did_the_work(events):
                    break
        # the screens a person opens first, on SQLite: every query must run there too
        pages = _dashboard_pages(
            base, ["/", f"/groups/{cast.GROUP}/", "/reviews/", "/notifications/"]
        )
        # issue 36: the people are told by email, into the folder the banner names
        mail = tmp_path / "var" / "mail"
        mail_deadline = time.monotonic() + 60
        while not any(mail.glob("*.log")) and time.monotonic() < mail_deadline:
            time.sleep(1)
    output = launched.output()
    assert _agents_did_the_work(events), output
    assert pages == dict.fromkeys(pages, 200), output
    actors = {e["actor"] for group_events in events.values() for e in group_events}
    assert actors <= DEMO_ACTORS | {f"agent:{spec.id}" for spec in organisation.AGENTS}
    assert {f"agent:{w}" for w in cast.WORKERS} & actors, output
    assert demo.returncode == 0, output
    assert "exited with status" not in output, output
    assert "Demo stopped." in output
    assert f"Mail:       {mail}/" in output
    assert any(mail.glob("*.log")), output
    # the projections equal a rebuild from the log (raises otherwise)
    launched.manage("rebuild_projections", "--verify")


def _dashboard_pages(base: str, paths: list[str]) -> dict[str, int]:
    """Sign in as the demo's admin through the login form; each page's status."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{base}/login/", timeout=30).read()
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = urllib.parse.urlencode(
        {
            "username": "admin",
            "password": os.environ.get("MWP_DEMO_PASSWORD", "missionweave-demo"),
            "csrfmiddlewaretoken": csrf,
        }
    ).encode()
    login = urllib.request.Request(f"{base}/login/", data=form, headers={"Referer": base + "/"})
    opener.open(login, timeout=30).read()
    statuses = {}
    for path in paths:
        try:
            statuses[path] = opener.open(base + path, timeout=30).status
        except urllib.error.HTTPError as error:
            statuses[path] = error.code
    return statuses
