"""Smoke tests of the benchmark harness: its pieces run and produce well-formed results.

Nothing here asserts a speed: the figures depend on the machine and whatever else runs on
it. The in-process measurement runs a fraction of a second against the test database.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from apps.ledger.models import Event, GroupLog
from benchmarks.ceilings import read_pgbench_logs
from benchmarks.config import load_config
from benchmarks.cpu_share import PARTIES
from benchmarks.inprocess import measure_inprocess
from benchmarks.report import render
from benchmarks.results import Results
from benchmarks.servers import server_environment
from benchmarks.stats import percentile, ratio, summarize
from benchmarks.world import build_world


def test_percentile_is_nearest_rank_of_sorted_samples():
    """The p50 and p99 are values that were observed, not interpolations."""
    samples = [float(n) for n in range(1, 101)]
    assert percentile(samples, 0.50) == 50.0
    assert percentile(samples, 0.99) == 99.0
    assert percentile(samples, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert math.isnan(percentile([], 0.5))
    with pytest.raises(ValueError):
        percentile(samples, 1.5)


def test_summarize_reports_rate_and_latency_in_milliseconds():
    """A Measurement turns seconds into ms and counts operations per second."""
    measurement = summarize(
        "demo", operations=30, elapsed_s=2.0, latencies_s=[0.003, 0.001, 0.002], errors=1
    )
    assert measurement.rate == 15.0
    assert measurement.latency_p50_ms == pytest.approx(2.0)
    assert measurement.latency_p99_ms == pytest.approx(3.0)
    assert measurement.latency_mean_ms == pytest.approx(2.0)
    assert measurement.requests == 3
    assert measurement.as_dict()["rate"] == 15.0
    assert math.isnan(ratio(10.0, 0.0))


def test_pgbench_log_lines_become_latencies_in_seconds(tmp_path):
    """pgbench --log writes one file per thread; the third field is the latency in µs."""
    (tmp_path / "pgb.123").write_text("0 0 1500 0 1764500000 1\n0 1 2500 0 1764500000 2\n")
    (tmp_path / "pgb.123.1").write_text("1 0 1000 0 1764500000 3\n")
    assert sorted(read_pgbench_logs(tmp_path)) == [0.001, 0.0015, 0.0025]


@pytest.mark.django_db(transaction=True)
def test_inprocess_quick_measurement_appends_gapless_events_and_is_well_formed(tmp_path):
    """A tiny in-process run (2 threads, 2 groups) refuses nothing and reports sane figures;
    every accepted command left one event in a gapless log (wire§6)."""
    config = dataclasses.replace(
        load_config(quick=True), seconds=0.3, warmup_seconds=0.1, output=tmp_path / "b.md"
    )
    world = build_world(groups=2, agents=2, prefix="smoke")

    measurement = measure_inprocess(world, clients=2, groups=2, config=config)

    cpu_s = measurement.params.pop("cpu_s")
    assert measurement.params == {"clients": 2, "groups": 2}
    assert set(cpu_s) == set(PARTIES)  # section 5b: who used the machine's CPU in the window
    assert cpu_s["client"] > 0  # in process, the client threads run the write path
    assert measurement.errors == 0, measurement.notes
    assert measurement.operations > 0
    assert measurement.requests == measurement.operations
    assert measurement.elapsed_s >= config.seconds
    assert 0 < measurement.latency_p50_ms <= measurement.latency_p99_ms
    created = Event.objects.filter(group_id__in=world.groups, type="mission.created").count()
    assert created >= measurement.operations  # the warm-up's commands come on top
    for log in GroupLog.objects.filter(group_id__in=world.groups):
        assert Event.objects.filter(group_id=log.group_id).count() == log.head_sequence

    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    results.inprocess.append(measurement)
    document = render(results)
    assert "## 2. The write path in process" in document
    assert "| 2 | 2 |" in document  # the row of this scenario (groups, clients)


def test_servers_run_the_product_settings_with_the_pool_switched_by_the_variant_only():
    """Table 1 measures the servers as shipped (the psycopg pool on PostgreSQL); table 1b the
    same settings module with ``MWP_DB_POOL=0``."""
    config = load_config(quick=True)
    pooled = server_environment(config, pool=True)
    unpooled = server_environment(config, pool=False)

    assert pooled["DJANGO_SETTINGS_MODULE"] == "missionweave.settings"
    assert unpooled["DJANGO_SETTINGS_MODULE"] == "missionweave.settings"
    assert (pooled["MWP_DB_POOL"], unpooled["MWP_DB_POOL"]) == ("1", "0")
    assert {k: v for k, v in pooled.items() if k != "MWP_DB_POOL"} == {
        k: v for k, v in unpooled.items() if k != "MWP_DB_POOL"
    }


def test_report_puts_the_pooled_servers_first_and_the_unpooled_ones_in_table_1b(tmp_path):
    """The main HTTP table is the product default; 1b and the ratio table name the variant."""
    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md")
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    pooled = summarize(
        "http", operations=90, elapsed_s=1.0, latencies_s=[0.011], params=_cell(1, 1)
    )
    unpooled = summarize(
        "http_no_pool", operations=50, elapsed_s=1.0, latencies_s=[0.019], params=_cell(1, 1)
    )
    results.http.append(pooled)
    results.http_no_pool.append(unpooled)

    document = render(results)

    table_1 = document.index("## 1. Signed commands over HTTP")
    table_1b = document.index("### 1b. The same servers without a connection pool")
    assert table_1 < document.index("| 1 | 1 | 90.0 |") < table_1b
    assert table_1b < document.index("| 1 | 1 | 50.0 |") < document.index("## 2.")
    assert "| HTTP (pool), 1 group(s) |" in document
    assert "| HTTP without pool, 1 group(s) |" in document
    assert "pooled_settings" not in document


def _cell(groups: int, clients: int) -> dict[str, int]:
    return {"groups": groups, "clients": clients}


@pytest.mark.parametrize(
    ("redis_url", "broker"),
    [("redis://127.0.0.1:6379/5", "redis://127.0.0.1:6379/5"), ("", "memory://")],
)
def test_the_write_paths_hints_never_reach_the_demos_filesystem_broker(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, broker: str
) -> None:
    """A bench run without Redis once hinted its groups into ``var/celery``, where a running
    ``make demo``'s worker read them: the servers' settings resolve the broker the harness
    names, the bench's Redis db or kombu's in-process memory, never ``filesystem://``."""
    monkeypatch.setenv("BENCH_REDIS_URL", redis_url)
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    config = load_config(quick=True)
    script = "from django.conf import settings; print(settings.CELERY_BROKER_URL)"
    resolved = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        env=server_environment(config, pool=True),
        capture_output=True,
        text=True,
        check=True,
    )
    assert config.broker_url == broker
    assert resolved.stdout.strip() == broker
