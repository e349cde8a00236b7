"""The benchmark's servers (``benchmarks/servers.py``, issue 15 §5): ``make bench`` runs the
production server with the production flags, every kind starts for real and serves the
product (REST and the websocket stream), and the report names the server it measured.

No speed is asserted: the comparison that chose the server is in docs/deploy.md.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from datetime import UTC, datetime
from importlib.metadata import version
from urllib.parse import urlsplit

import httpx
import pytest
from django.db import connection
from websockets.sync.client import connect

from benchmarks.config import load_config
from benchmarks.report import render
from benchmarks.results import Results
from benchmarks.servers import describe_server, running_servers, server_command
from benchmarks.world import build_world

#: the production command line's choices (docs/deploy.md), each measured against daphne
PRODUCTION_OPTIONS = {
    "--loop": "uvloop",
    "--http": "missionweave.http_deadlines:DeadlineHttpToolsProtocol",
    "--ws": "websockets-sansio",
    "--ws-per-message-deflate": "false",
    "--lifespan": "off",
}


def _options(command: list[str]) -> dict[str, str]:
    """``--flag value`` pairs of a command line."""
    return {
        flag: value
        for flag, value in itertools.pairwise(command)
        if flag.startswith("--") and not value.startswith("--")
    }


def test_the_benchmark_runs_the_production_server_by_default(monkeypatch):
    """Without ``BENCH_SERVER`` the HTTP figures come from uvicorn with uvloop, httptools and
    the sans-I/O websockets protocol without compression, ``--workers`` passed through."""
    monkeypatch.delenv("BENCH_SERVER", raising=False)
    config = load_config()

    command = server_command(config.server, port=8123, workers=2)

    assert config.server == "uvicorn"
    options = _options(command)
    assert PRODUCTION_OPTIONS.items() <= options.items()
    assert (options["--port"], options["--workers"]) == ("8123", "2")
    assert command[-1] == "missionweave.asgi:application"


def test_daphne_has_no_worker_mode_and_an_unknown_kind_is_refused():
    """daphne scales only by more processes on more ports; a typo in BENCH_SERVER fails
    before anything starts instead of measuring some other server."""
    with pytest.raises(ValueError, match="daphne"):
        server_command("daphne", port=8123, workers=2)
    with pytest.raises(ValueError, match="unknown server kind"):
        server_command("hypercorn", port=8123)


def test_report_names_the_server_and_versions_that_served_the_http_figures(tmp_path):
    """The Settings line says which server, which versions and how many processes ran."""
    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md", servers=2)
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    results.facts["server"] = describe_server("uvicorn", processes=2)

    document = render(results)

    settings_line = next(line for line in document.splitlines() if "**Settings:**" in line)
    assert f"HTTP through uvicorn {version('uvicorn')} (uvloop {version('uvloop')}" in settings_line
    assert f"httptools {version('httptools')}" in settings_line
    assert "2 process(es), one port each" in settings_line
    assert "one port (--workers 4)" in describe_server("uvicorn", processes=1, workers=4)


def _test_database_url() -> str:
    """The URL of the database this test runs on (pytest-django's test database)."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return parts._replace(path=f"/{connection.settings_dict['NAME']}").geturl()


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["uvicorn", "daphne"])
def test_each_server_kind_serves_rest_and_the_stream_of_the_given_database(kind):
    """The command line of each kind, started as the benchmark starts it, answers REST and
    replays a group's log over ``/ws/v1/stream`` (wire§7) from the benchmark's database."""
    world = build_world(groups=1, agents=1, prefix=f"srv-{kind}")
    agent, group = world.agents[0], world.groups[0]
    config = dataclasses.replace(
        load_config(quick=True), database_url=_test_database_url(), servers=1, server=kind
    )

    with running_servers(config) as urls:
        assert httpx.get(f"{urls[0]}/healthz", timeout=10).json() == {"status": "ok"}
        ws_url = urls[0].replace("http://", "ws://") + "/ws/v1/stream"
        with connect(
            ws_url, additional_headers={"Authorization": f"Bearer {agent.token}"}, open_timeout=10
        ) as socket:
            socket.send(json.dumps({"op": "SUBSCRIBE", "group": group, "afterSequence": 0}))
            frame = json.loads(socket.recv(timeout=10))
            while frame.get("op") != "EVENT":
                frame = json.loads(socket.recv(timeout=10))

    assert frame["event"]["group"] == group
    assert frame["event"]["sequence"] == 1
