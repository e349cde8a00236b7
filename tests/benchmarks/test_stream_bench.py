"""Smoke tests of the stream benchmarks (``benchmarks/stream.py``, ``benchmarks/replay.py``,
report sections 7 and 8).

Tiny sizes against the test database and a real server: the subscribers authenticate,
receive every timed event once and in order, the bulk-built log is a valid chain that the
write path extends, and each section replaces only itself in the report. No speed is
asserted.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from django.db import connection
from psycopg.conninfo import make_conninfo

from apps.ledger.models import Event, GroupLog
from benchmarks.replay import (
    GROUP,
    KEYSET_WAYS,
    BuiltGroup,
    ReplayResult,
    ReplayRun,
    check_cached,
    keyset_read,
    populate,
    replay_rest,
    replay_stream,
    verify_chain,
)
from benchmarks.report import SWEEP_BEGIN, SWEEP_END
from benchmarks.stream import StreamResult, measure_level
from benchmarks.stream_report import (
    REPLAY_BEGIN,
    STREAM_BEGIN,
    carry_over,
    replay_section,
    splice_replay,
    splice_stream,
    stream_section,
)
from benchmarks.world import build_world
from missionweave.protocol.events import chains


@pytest.mark.django_db(transaction=True)
def test_every_subscriber_gets_every_timed_event_once_with_its_latency(live_asgi_server):
    """wire§7: three member agents, each on its own socket with its own session token,
    subscribed after the head, receive each of three commands' events exactly once and in
    order; every receipt becomes one latency sample."""
    world = build_world(groups=1, agents=4, prefix="smoke")
    writer, subscribers = world.agents[0], world.agents[1:]

    level = measure_level(
        subscribers,
        writer,
        world.groups[0],
        [live_asgi_server.url],
        subscribers=3,
        events=3,
        gap_s=0.0,
        log=print,
    )

    assert (level.subscribers, level.events, level.processes) == (3, 3, 1)
    assert (level.samples, level.missing) == (9, 0)
    assert (level.errors, level.out_of_order) == (0, 0), level.first_error
    assert level.sent_ms["p50"] > level.accept_ms["p50"]  # the request took time to answer
    assert level.accept_ms["p50"] <= level.accept_ms["p99"] <= level.accept_ms["max"]
    assert level.last_ms["p50"] >= level.accept_ms["p50"]  # each event's slowest socket
    assert level.server_cpu_s >= 0
    assert level.elapsed_s > 0

    result = StreamResult(levels=[level], servers=1, poll_s=0.5, gap_s=0.0)
    section = splice_stream("# Benchmarks\n\n## Where the time goes\n", result, "pytest")
    assert "## 7. Live events on the websocket stream" in section
    assert "| 3 | 3 | 9 | 0 |" in section


@pytest.mark.django_db(transaction=True)
def test_the_bulk_built_group_is_a_valid_chain_that_the_write_path_extends():
    """wire§6: the generated events chain gaplessly from the write path's first event to the
    head row, the write path's last command appended right after them, and the cheap
    reuse check accepts the group and refuses a head it does not hold."""
    reader, generated = populate(300, log=print)

    head, head_hash = verify_chain(GROUP)
    assert head == 300
    assert generated == 300 - 4  # two grants, the first and the last command
    assert Event.objects.filter(group_id=GROUP).count() == 300
    last = Event.objects.get(group_id=GROUP, sequence=head).as_wire()
    before = Event.objects.get(group_id=GROUP, sequence=head - 1).as_wire()
    assert last["command_id"] != before["command_id"]
    assert before["command_id"] == f"cmd-replay-{head - 1:07d}"
    assert chains(last, previous_hash=before["hash"], previous_sequence=head - 1)

    built = BuiltGroup(
        database="test",
        group=GROUP,
        head=head,
        head_hash=head_hash,
        generated=generated,
        reader_id=reader.id,
        reader_seed="",
        built_at="now",
        build_s=0.0,
        verify_s=0.0,
    )
    assert check_cached(built) is None
    assert check_cached(dataclasses.replace(built, head=head + 1)) is not None
    assert GroupLog.objects.get(group_id=GROUP).head_sequence == head


@pytest.mark.django_db(transaction=True)
def test_the_replays_read_the_whole_bulk_built_log(live_asgi_server):
    """The stream replay counts every event up to the head's; REST pages reach it too, the
    second of the three served from the server's read ahead (the third, short of the limit,
    is read afresh), as its ``/metrics`` says."""
    reader, generated = populate(2500, log=print)
    head, head_hash = verify_chain(GROUP)
    reader.open_session()
    built = BuiltGroup("test", GROUP, head, head_hash, generated, reader.id, "", "now", 0, 0)
    ws_url = live_asgi_server.ws_url + "/ws/v1/stream"

    stream = replay_stream(ws_url, reader.token, built)
    rest = replay_rest(live_asgi_server.url, reader.token, built)
    keyset = keyset_read(_test_database_url(), built, way=KEYSET_WAYS[0])

    assert (stream.events, rest.events, rest.requests) == (2500, 2500, 3)
    assert rest.served_ahead == 1
    assert (keyset.events, keyset.requests) == (2500, 3)
    assert stream.seconds > 0
    assert rest.seconds > 0
    assert keyset.seconds > 0
    result = ReplayResult(built=built, runs=[keyset, stream, rest])
    assert result.ceiling == keyset.rate
    assert ReplayResult.from_dict(json.loads(json.dumps(result.as_dict()))).runs == [
        keyset,
        stream,
        rest,
    ]


def _test_database_url() -> str:
    """The test database, as a psycopg connection string (the raw read uses no Django)."""
    return make_conninfo(os.environ["DATABASE_URL"], dbname=connection.settings_dict["NAME"])


def test_the_replays_are_reported_as_shares_of_the_faster_raw_keyset_read():
    """Section 8 divides each replay's rate by the faster of the two raw keyset reads and
    says whether issue 15's 0.5x holds for both; without a keyset read it says so."""
    built = BuiltGroup("db", "g", 10, "h", 6, "r", "", "now", 1.0, 1.0)
    runs = [
        ReplayRun(KEYSET_WAYS[0], 10, 1.0, 0.0, 0.1, 1),  # 10/s
        ReplayRun("stream", 10, 2.0, 0.5, 0.5),  # 5/s
        ReplayRun("rest", 10, 0.5, 0.5, 0.5, 1, {"p50": 1.0, "p99": 2.0}),  # 20/s
        ReplayRun(KEYSET_WAYS[1], 10, 0.5, 0.0, 0.1, 1),  # 20/s: the ceiling
    ]

    section = "\n".join(replay_section(ReplayResult(built=built, runs=runs), "cmd"))

    assert "| 10 | 0.5 | 20 | 1.00× |" in section  # REST at the ceiling
    assert "| 10 | 2.0 | 5 | 0.25× |" in section
    assert "| 10 | 1.0 | 10 | 0.50× |" in section  # the slower keyset read
    assert "stream 0.25×, REST 1.00× of 20 events/s — does **not** hold." in section
    fast = [*runs[:1], dataclasses.replace(runs[1], seconds=1.0), *runs[2:]]
    section = "\n".join(replay_section(ReplayResult(built=built, runs=fast), "cmd"))
    assert "stream 0.50×, REST 1.00× of 20 events/s — holds." in section
    section = "\n".join(replay_section(ReplayResult(built=built, runs=runs[1:3]), "cmd"))
    assert "not measured (this run has no raw keyset read)" in section


def test_the_stream_section_names_the_server_it_measured():
    """``--only stream`` may run on another server than the full run's Settings line names,
    so section 7 names its own; a result saved before it knew says how many processes."""
    named = StreamResult(servers=2, server="uvicorn 9.9 (uvloop 1.0), 2 process(es), one port")
    assert "- **Servers:** uvicorn 9.9 (uvloop 1.0), 2 process(es), one port, running" in (
        "\n".join(stream_section(named, "cmd"))
    )
    older = StreamResult.from_dict({"servers": 2, "poll_s": 0.5})
    assert "- **Servers:** 2 process(es), running" in "\n".join(stream_section(older, "cmd"))


def test_each_stream_section_replaces_only_itself_and_a_full_run_keeps_both():
    """``--only stream`` / ``--only replay`` swap their own section and keep every other
    figure; a full run's report (which measures neither) gets both back from the old one."""
    legacy = (
        f"# Benchmarks\n\n## 5. Ratios\n\nfigures\n\n{SWEEP_BEGIN}\n\nsweep\n{SWEEP_END}\n"
        "## Where the time goes\n\nsteps\n"
    )
    stream = StreamResult(servers=2, poll_s=0.5, gap_s=0.05)
    replay = ReplayResult(
        built=BuiltGroup("db", "g", 10, "h", 6, "r", "", "now", 1.0, 1.0),
        runs=[ReplayRun("rest", 10, 2.0, 0.5, 0.5, 1, {"p50": 1.0, "p99": 2.0})],
    )

    first = splice_replay(splice_stream(legacy, stream, "one"), replay, "two")
    assert first.index(SWEEP_END) < first.index(STREAM_BEGIN) < first.index(REPLAY_BEGIN)
    assert first.index(REPLAY_BEGIN) < first.index("## Where the time goes")
    assert "| REST: `GET …/events?after=N&limit=1000`, page after page | 10 | 2.0 | 5 |" in first

    again = splice_stream(first, dataclasses.replace(stream, servers=3), "three")
    assert again.count(STREAM_BEGIN) == again.count(REPLAY_BEGIN) == 1
    assert "**Servers:** 3 process(es)," in again
    assert "**Servers:** 2 process(es)," not in again
    assert again.replace("`three`", "`one`").replace("3 process(es)", "2 process(es)") == first

    kept = carry_over(first, legacy)
    assert kept == first
    assert carry_over(first, first) == first
