"""``/healthz``, ``/readyz`` and ``/metrics`` (issue 15 §7), through the real URL routes.

Counters are process-wide and other tests count into them too, so the metric tests compare a
scrape before with a scrape after, never an absolute value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from apps.stream.cursors import acknowledge
from apps.work.models import DUE_WORK_SWEEP, SweepRun
from apps.work.tasks import sweep_due_work
from missionweave.protocol.timefmt import parse_timestamp
from tests.factories import World, mission_body

from .http import error_of, head_sequence, json_of, post, submit
from .work_http import Wire, build_work_world, owned

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: Client, **headers: str) -> Samples:
    """Every sample of ``GET /metrics``, by (name, labels)."""
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def readiness(client: Client) -> tuple[int, dict[str, Any]]:
    response = client.get("/readyz")
    assert response["Content-Type"] == "application/json"
    return response.status_code, json.loads(response.content)


# --- /healthz ----------------------------------------------------------------------------


def test_healthz_answers_ok_without_touching_the_database(client: Client) -> None:
    """Liveness reads nothing: this test has no database access, which pytest-django would
    refuse with an error."""
    response = client.get("/healthz")
    assert (response.status_code, json.loads(response.content)) == (200, {"status": "ok"})


def test_health_endpoints_sit_at_the_root_not_under_the_api(client: Client) -> None:
    """They are operational, not part of the wire contract: ``/api/v1/healthz`` is the API's
    404 in the wire.md §8 shape."""
    error_of(client.get("/api/v1/healthz"), 404, "NOT_FOUND")


# --- /readyz -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_readyz_is_ready_when_the_database_redis_and_a_fresh_sweep_answer(
    client: Client,
) -> None:
    SweepRun.record(DUE_WORK_SWEEP)
    status, body = readiness(client)
    assert (status, body["status"], body["failing"]) == (200, "ready", [])
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["redis"]["status"] == ("ok" if django_settings.REDIS_URL else "not used")
    assert body["checks"]["beat"]["status"] == "ok"


@pytest.mark.django_db
def test_readyz_without_any_sweep_is_not_ready_and_names_the_beat(client: Client) -> None:
    """A server started without beat (the tests, ``runserver``) is not ready on that check."""
    status, body = readiness(client)
    assert (status, body["status"], body["failing"]) == (503, "not ready", ["beat"])
    assert "no sweep has finished yet" in body["checks"]["beat"]["detail"]
    assert body["checks"]["database"]["status"] == "ok"


@pytest.mark.django_db
def test_readyz_with_a_stale_sweep_is_not_ready(client: Client) -> None:
    """Fresh is within three beat intervals (``MWP_SWEEP_INTERVAL_S``), by the database clock."""
    SweepRun.record(DUE_WORK_SWEEP)
    stale = datetime.now(UTC) - timedelta(seconds=3 * django_settings.MWP_SWEEP_INTERVAL_S + 30)
    SweepRun.objects.filter(task=DUE_WORK_SWEEP).update(finished_at=stale)
    status, body = readiness(client)
    assert (status, body["failing"]) == (503, ["beat"])
    assert "fresh: within" in body["checks"]["beat"]["detail"]


@pytest.mark.django_db
def test_readyz_says_redis_is_not_used_on_the_embedded_default(
    client: Client, settings: Any
) -> None:
    settings.REDIS_URL = ""
    SweepRun.record(DUE_WORK_SWEEP)
    status, body = readiness(client)
    assert status == 200
    assert body["checks"]["redis"]["status"] == "not used"


@pytest.mark.django_db
def test_a_check_that_raises_is_a_failing_check_never_a_500(client: Client, settings: Any) -> None:
    """Nothing listens on port 1: the PING raises, the answer is 503 naming ``redis``, and
    the exception's message (which may name hosts) stays in the log."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    SweepRun.record(DUE_WORK_SWEEP)
    status, body = readiness(client)
    assert (status, body["failing"]) == (503, ["redis"])
    assert body["checks"]["redis"]["detail"] == "raised ConnectionError (see the server log)"


# --- /metrics ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_metrics_count_an_accepted_and_a_refused_command_by_type_and_code(
    api: APIClient, world: World
) -> None:
    before = scrape(api)
    created = world.olga.command(world.group, "mission.create", mission_body("m-1"))
    json_of(submit(api, world.group, created, world.olga.token), 201)
    again = world.w1.command(world.group, "mission.create", mission_body("m-1"))
    error_of(submit(api, world.group, again, world.w1.token), 409, "ILLEGAL_TRANSITION")
    after = scrape(api)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("mwp_commands_accepted_total", type="mission.create", replayed="false") == 1
    refused = {"type": "mission.create", "code": "ILLEGAL_TRANSITION"}
    assert delta("mwp_commands_refused_total", **refused) == 1
    assert delta("mwp_write_path_seconds_count", entry="command") == 2
    assert delta("mwp_write_path_seconds_bucket", entry="command", le="5.0") == 2


@pytest.mark.django_db
def test_an_unknown_command_type_is_counted_as_unknown(api: APIClient, world: World) -> None:
    """The type label only takes the command table's names: cardinality stays bounded."""
    before = scrape(api)
    odd = world.olga.command(world.group, "mission.do_anything", {})
    response = submit(api, world.group, odd, world.olga.token)
    code = json.loads(response.content)["error"]["code"]
    after = scrape(api)
    labels = {"type": "unknown", "code": code}
    assert value(after, "mwp_commands_refused_total", **labels) == (
        value(before, "mwp_commands_refused_total", **labels) + 1
    )
    assert not any("mission.do_anything" in dict(key[1]).values() for key in after)


@pytest.mark.django_db
def test_metrics_observe_the_size_of_a_batch_and_count_each_item(
    api: APIClient, world: World
) -> None:
    good = world.olga.command(world.group, "mission.create", mission_body("m-a"))
    duplicate = world.olga.command(world.group, "mission.create", mission_body("m-a"))
    before = scrape(api)
    path = f"/groups/{world.group}/commands:batch"
    json_of(post(api, path, {"commands": [good, duplicate]}, world.olga.token), 200)
    after = scrape(api)
    assert value(after, "mwp_command_batch_size_count") == (
        value(before, "mwp_command_batch_size_count") + 1
    )
    assert value(after, "mwp_command_batch_size_sum") == (
        value(before, "mwp_command_batch_size_sum") + 2
    )
    assert value(after, "mwp_write_path_seconds_count", entry="batch") == (
        value(before, "mwp_write_path_seconds_count", entry="batch") + 1
    )
    refused = {"type": "mission.create", "code": "ILLEGAL_TRANSITION"}
    assert value(after, "mwp_commands_refused_total", **refused) == (
        value(before, "mwp_commands_refused_total", **refused) + 1
    )


@pytest.mark.django_db
def test_metrics_need_the_bearer_token_when_one_is_configured(
    client: Client, settings: Any
) -> None:
    settings.MWP_METRICS_TOKEN = "metrics-secret"
    error_of(client.get("/metrics"), 401, "UNAUTHENTICATED")
    wrong = client.get("/metrics", headers={"Authorization": "Bearer not-it"})
    error_of(wrong, 401, "UNAUTHENTICATED")
    assert wrong["WWW-Authenticate"].startswith("Bearer")
    scrape(client, Authorization="Bearer metrics-secret")


@pytest.mark.django_db
def test_metrics_are_open_without_a_token(client: Client, settings: Any) -> None:
    settings.MWP_METRICS_TOKEN = ""
    assert ("mwp_ack_cursors", frozenset()) in scrape(client)


@pytest.mark.django_db
def test_the_furthest_behind_ack_cursors_are_reported_without_principals(
    client: Client, world: World
) -> None:
    head = head_sequence(world.group)
    assert head > 1
    acknowledge(world.w1.principal, {world.group: head})
    acknowledge(world.w2.principal, {world.group: 1})
    samples = scrape(client)
    assert value(samples, "mwp_ack_cursors") == 2
    assert value(samples, "mwp_ack_cursor_max_lag_events") == head - 1
    assert value(samples, "mwp_ack_cursors_behind", over="100") == (1 if head - 1 > 100 else 0)
    assert not any(world.w2.principal in dict(key[1]).values() for key in samples)


@pytest.mark.django_db
def test_the_sweep_records_its_run_and_the_sweep_lag_falls_to_zero(
    api: APIClient, client: Client
) -> None:
    """An expired lease is due and unhandled: the lag is its age. The beat task reassigns it,
    stamps its run, and then the lag is 0 and ``/readyz`` is ready."""
    ww = build_work_world()
    wire = Wire(api, ww.group, ww.w1)
    epoch = owned(wire, ww, "wi-due")["ownership_epoch"]
    start = {"work_item": "wi-due", "ownership_epoch": epoch, "lease_ttl_s": 1}
    lease = wire.ok(ww.w2, "work.start", start)["result"]["lease"]
    wait = (parse_timestamp(lease["expires_at"]) - datetime.now(UTC)).total_seconds()
    time.sleep(max(wait, 0) + 0.2)
    before = scrape(client)
    assert value(before, "mwp_sweep_lag_seconds") > 0
    assert SweepRun.age(DUE_WORK_SWEEP) is None
    assert readiness(client)[0] == 503

    assert sweep_due_work()["applied"] == 1

    after = scrape(client)
    assert value(after, "mwp_sweep_lag_seconds") == 0
    assert 0 <= value(after, "mwp_sweep_last_run_age_seconds") < 5
    assert readiness(client)[0] == 200
    reassigned = {"type": "work.reassign", "replayed": "false"}
    assert value(after, "mwp_commands_accepted_total", **reassigned) == (
        value(before, "mwp_commands_accepted_total", **reassigned) + 1
    )
    assert value(after, "mwp_write_path_seconds_count", entry="batch") > value(
        before, "mwp_write_path_seconds_count", entry="batch"
    )


@pytest.mark.django_db
def test_a_second_sweep_updates_the_one_record(client: Client) -> None:
    SweepRun.record(DUE_WORK_SWEEP)
    first = SweepRun.objects.get(task=DUE_WORK_SWEEP).finished_at
    sweep_due_work()
    assert SweepRun.objects.count() == 1
    assert SweepRun.objects.get(task=DUE_WORK_SWEEP).finished_at >= first


@pytest.mark.django_db
def test_with_a_multiprocess_folder_one_scrape_reports_every_processs_counts(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (a second server, a Celery worker) started with
    ``PROMETHEUS_MULTIPROC_DIR`` writes its counts to the folder; a scrape of this process
    with the same folder reports them, next to the database gauges."""
    counting = (
        "from apps.ledger import metrics\n"
        "from missionweave.protocol.errors import ErrorCode, ProtocolError\n"
        "metrics.count('work.reassign', ProtocolError(ErrorCode.ILLEGAL_TRANSITION, 'x'))\n"
    )
    environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", counting], env=environment, check=True, timeout=60)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    samples = scrape(client)
    labels = {"type": "work.reassign", "code": "ILLEGAL_TRANSITION"}
    assert value(samples, "mwp_commands_refused_total", **labels) == 1
    assert ("mwp_ack_cursors", frozenset()) in samples
