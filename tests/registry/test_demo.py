"""``manage.py demo --no-serve``: live demo data through the real services and write path."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.db import connection

from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.registry import demo
from apps.registry.models import Agent, AgentKey, AgentSession
from apps.registry.services import api_token_create, authenticate_bearer, memberships_of
from apps.work.models import Mission

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def seed(keys_dir) -> str:
    out = io.StringIO()
    call_command("demo", "--no-serve", "--keys-dir", str(keys_dir), stdout=out)
    return out.getvalue()


def head() -> int:
    return GroupLog.objects.get(group_id=demo.GROUP).head_sequence


def test_demo_seeds_group_members_sessions_and_missions_through_the_write_path(tmp_path):
    """wire§4: memberships and missions are events in g-demo's log, sessions are open."""
    seed(tmp_path)

    assert memberships_of("user:admin")[demo.GROUP]["roles"] == ["admin", "mission_owner"]
    assert memberships_of(f"agent:{demo.COORDINATOR}")[demo.GROUP]["roles"] == ["coordinator"]
    for worker in demo.WORKERS:
        assert memberships_of(f"agent:{worker}")[demo.GROUP]["roles"] == ["worker"]
        assert AgentSession.objects.filter(agent_id=worker).count() == 1

    types = list(
        Event.objects.filter(group_id=demo.GROUP).order_by("sequence").values_list("type", "actor")
    )
    assert types[:4] == [("membership.granted", "user:admin")] * 4
    assert types[4:] == [("mission.created", f"agent:{demo.COORDINATOR}")] * len(demo.SEED_MISSIONS)
    assert head() == len(types)
    assert set(
        Mission.objects.filter(group_id=demo.GROUP).values_list("mission_id", flat=True)
    ) >= {mission_id for mission_id, _ in demo.SEED_MISSIONS}
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())


def test_demo_seeding_twice_appends_nothing_and_still_verifies(tmp_path):
    """wire§3 step 5: the seed missions replay from their idempotency records the second time."""
    seed(tmp_path)
    first_head = head()
    first_keys = AgentKey.objects.count()
    first_records = CommandRecord.objects.filter(group_id=demo.GROUP).count()

    seed(tmp_path)

    assert head() == first_head
    assert AgentKey.objects.count() == first_keys  # the same keys, read back from keys_dir
    assert CommandRecord.objects.filter(group_id=demo.GROUP).count() == first_records
    # each run opens a new session: the coordinator is at session epoch 2
    assert Agent.objects.get(pk=demo.COORDINATOR).session_epoch == 2
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())


def test_demo_admin_can_sign_in_and_use_the_printed_api_token(tmp_path, monkeypatch):
    """The banner's login and token work; the password comes from MWP_DEMO_PASSWORD."""
    monkeypatch.setenv("MWP_DEMO_PASSWORD", "a-demo-password-for-tests")
    output = seed(tmp_path)

    assert authenticate(username="admin", password="a-demo-password-for-tests") is not None
    token = next(line.split()[-1] for line in output.splitlines() if "API token:" in line)
    caller = authenticate_bearer(token).caller
    assert (caller.principal, caller.is_staff) == ("user:admin", True)


def test_live_missions_are_signed_by_the_coordinator_and_survive_a_newer_session(tmp_path):
    """R11.3-10: a live mission after another run replaced the session reopens one, then lands."""
    world = demo.demo_seed(keys_dir=tmp_path, password="pw")
    goals = demo.live_goals()
    before = head()

    outcome = demo.create_live_mission(world, next(goals))
    demo.open_session(demo.DemoAgent(demo.COORDINATOR, world.coordinator.key))  # "another run"
    replaced = demo.create_live_mission(world, next(goals))

    assert head() == before + 2
    for result in (outcome, replaced):
        assert result.status == 201
        assert [e["type"] for e in result.body["events"]] == ["mission.created"]
    assert Event.objects.get(sequence=head(), group_id=demo.GROUP).actor == (
        f"agent:{demo.COORDINATOR}"
    )
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())


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
def test_demo_serves_the_api_and_keeps_adding_signed_missions(tmp_path):
    """wire§4: ``manage.py demo`` serves /api/v1 with daphne and appends live missions."""
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
    assert {(e["type"], e["actor"]) for e in page["events"]} == {
        ("mission.created", f"agent:{demo.COORDINATOR}")
    }
    assert server.returncode == 0, output
    assert "Demo stopped." in output
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())
