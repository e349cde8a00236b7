"""Section 8: replaying a 1,000,000-event group, over the stream and over REST pages.

**The group.** Through the write path: the group, a writer (coordinator) and a reader
(observer) agent with their memberships, and one ``mission.create`` whose stored event is
the *template*. Then, in one transaction holding the head row's lock as the write path does,
the remaining events are generated in Python — the template's document with a new
``event_id``, ``sequence``, ``command_id``, mission id, ``recorded_at`` (one microsecond
apart) and ``prev_hash``, hashed with the protocol's own :func:`event_hash` and stored as
canonical JSON — and ``COPY``-ed into ``ledger_event``; the head row takes the last sequence
and hash. Finally one more ``mission.create`` goes through the write path, which appends
after the generated head only if the chain's head row is consistent. The generated events'
missions are not in the projections (nothing here reads them) and have no command records.

**Verification.** After building, every event is read back in order and
:func:`first_chain_break` checks the whole chain (sequences gapless from 1, each
``prev_hash`` the previous ``hash``, each ``hash`` the digest of its own content) and that
it ends at the head row. The built database is kept (``BENCH_REPLAY_DATABASE_URL``, default
``mw_bench_replay``) with the reader's key in ``var/benchmarks/``; a later run reuses it
after cheaper checks (row count and sequence range against the head row, the head hash, and
:data:`SAMPLE_WINDOWS` random windows of consecutive events chain-checked).

**Replays.** (a) One socket, ``SUBSCRIBE`` after 0, counting EVENT frames until the head's;
(b) ``GET /api/v1/groups/{g}/events?after=N&limit=1000`` page after page on one keep-alive
connection until the head, ``next_after`` read from each body's end (the first and the last
page decoded whole); the server reads each next page ahead (``apps/api/next_pages.py``), and
how many pages it served so is read from its ``/metrics``. Neither client decodes every
event, as the ceiling does not. Rate: events over wall time; the CPU of the server process
and of this client is reported next to it.

**The ceiling** (issue 15's must-hold: each replay ≥ 0.5× it). Right before the stream replay
and again right after the REST one, with the server idle, this process reads the same rows
with raw psycopg, no Django: one connection, one prepared keyset statement (``sequence > last
ORDER BY sequence LIMIT 1000``, looping on the last sequence), every page fetched into Python
as ``(sequence, document)`` — the two columns the events view and the stream read too. The
faster of the two reads is the ceiling, so a burst of other work on the machine during one
of them does not flatter the ratios.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from django.core.management import call_command
from django.db import connection, transaction

from apps.ledger.models import Event, GroupLog
from apps.ledger.write_path import submit_command
from apps.registry import services
from missionweave.protocol.canonical import ZERO_HASH, canonical_bytes
from missionweave.protocol.events import event_hash, first_chain_break
from missionweave.protocol.signing import (
    generate_private_key,
    private_key_from_seed,
    private_key_seed,
)
from missionweave.protocol.timefmt import format_timestamp

from .config import ROOT, BenchConfig
from .database import database_name, maintenance_conninfo, reset_database
from .envelopes import mission_create
from .facts import _git_revision, load_average
from .http_load import KeepAlive
from .servers import running_servers
from .stats import percentile
from .stream import cpu_seconds, server_pids
from .stream_clients import replay_count
from .world import BenchAgent, register_agent

ORGANIZATION = "org-replay"
ADMIN = "replay-admin"
GROUP = "replay-g"
COPY_ROWS = 20_000
SAMPLE_WINDOWS = 200
WINDOW = 50
PAGE_LIMIT = 1000
#: the ceiling's statement: a keyset page of the same rows the replays read (see the docstring)
KEYSET_PAGE = (
    "SELECT sequence, document FROM ledger_event WHERE group_id = %s AND sequence > %s "
    "ORDER BY sequence LIMIT %s"
)
#: ``ReplayRun.way`` of the ceiling's reads, before and after the replays
KEYSET_WAYS = ("keyset-before", "keyset-after")
#: issue 15: each replay reaches at least this share of the ceiling
CEILING_SHARE = 0.5
#: the end of an events page: its head and next_after
PAGE_END = re.compile(rb'\],"head":(\d+),"next_after":(\d+)\}\s*$')
#: the server's count of pages it answered from a read ahead (apps/api/next_pages.py)
SERVED_AHEAD = re.compile(rb'^mwp_event_pages_read_ahead_total\{outcome="served"\} (\S+)$', re.M)
COPY_COLUMNS = "group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document"


def replay_events(*, quick: bool) -> int:
    return int(os.environ.get("BENCH_REPLAY_EVENTS", "5000" if quick else "1000000"))


@dataclass
class BuiltGroup:
    """The group to replay and how it came to be (saved next to the database)."""

    database: str
    group: str
    head: int
    head_hash: str
    generated: int  # events generated and COPY-ed (the rest came through the write path)
    reader_id: str
    reader_seed: str  # hex of the reader's Ed25519 seed: a benchmark-only key
    built_at: str
    build_s: float
    verify_s: float
    table_bytes: int = 0
    reused: bool = False
    check: str = ""  # how this run checked the chain
    check_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "reader_seed"}


@dataclass
class ReplayRun:
    """One replay of the whole log."""

    way: str  # "stream", "stream_batched", "rest", or one of KEYSET_WAYS (the ceiling)
    events: int
    seconds: float
    server_cpu_s: float
    client_cpu_s: float
    requests: int = 1  # pages for REST, sockets for the stream
    request_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    #: REST: pages the server answered with a page it had read ahead (its /metrics)
    served_ahead: int | None = None

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("nan")


@dataclass
class ReplayResult:
    built: BuiltGroup
    runs: list[ReplayRun]
    servers: int = 1
    server: str = "daphne"  # the ASGI server kind that served both replays
    started_at: str = ""
    load_before: str = ""
    load_after: str = ""
    git_revision: str = ""

    @property
    def ceiling(self) -> float:
        """Events/s of the faster raw keyset read (NaN if the run has none)."""
        rates = [run.rate for run in self.runs if run.way in KEYSET_WAYS]
        return max(rates) if rates else float("nan")

    def ratio(self, run: ReplayRun) -> float:
        """``run``'s rate as a share of the ceiling."""
        return run.rate / self.ceiling

    def as_dict(self) -> dict[str, Any]:
        return {
            "built": self.built.as_dict(),
            "runs": [
                {**dataclasses.asdict(run), "rate": run.rate, "ratio": self.ratio(run)}
                for run in self.runs
            ],
            "ceiling": self.ceiling,
            "servers": self.servers,
            "server": self.server,
            "started_at": self.started_at,
            "load_before": self.load_before,
            "load_after": self.load_after,
            "git_revision": self.git_revision,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReplayResult:
        built = BuiltGroup(**{"reader_seed": "", **data["built"]})
        derived = ("rate", "ratio")
        runs = [
            ReplayRun(**{k: v for k, v in run.items() if k not in derived}) for run in data["runs"]
        ]
        rest = {k: v for k, v in data.items() if k not in ("built", "runs", "ceiling")}
        return cls(built=built, runs=runs, **rest)


# --- the cache ---------------------------------------------------------------------------------


def _state_path(url: str) -> Path:
    return ROOT / "var" / "benchmarks" / f"replay-{database_name(url)}.json"


def database_exists(url: str) -> bool:
    with psycopg.connect(maintenance_conninfo(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database_name(url)]
        ).fetchone()
    return row is not None


def _load_state(url: str, events: int) -> BuiltGroup | None:
    path = _state_path(url)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    built = BuiltGroup(**data)
    return built if built.head == events else None


def check_cached(built: BuiltGroup) -> str | None:
    """Why the saved group cannot be reused (``None``: it can), checked cheaply."""
    log = GroupLog.objects.filter(group_id=built.group).first()
    if log is None or (log.head_sequence, log.head_hash) != (built.head, built.head_hash):
        return "the head row differs from the saved one"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), min(sequence), max(sequence) FROM ledger_event WHERE group_id = %s",
            [built.group],
        )
        count, low, high = cursor.fetchone()
    if (count, low, high) != (built.head, 1, built.head):
        return f"{count} events {low}..{high}, not 1..{built.head}"
    last = Event.objects.get(group_id=built.group, sequence=built.head)
    if last.hash != built.head_hash or event_hash(last.as_wire()) != built.head_hash:
        return "the last event does not hash to the head"
    rng = random.Random()
    for _ in range(SAMPLE_WINDOWS):
        start = rng.randint(1, max(1, built.head - WINDOW))
        documents = [
            json.loads(text)
            for text in Event.objects.filter(
                group_id=built.group, sequence__gte=start, sequence__lte=start + WINDOW
            )
            .order_by("sequence")
            .values_list("document", flat=True)
        ]
        first = documents[0]
        if first["hash"] != event_hash(first):
            return f"event {start} does not hash to its own hash"
        if first_chain_break(documents[1:], after_hash=first["hash"], after_sequence=start):
            return f"the chain breaks in {start}..{start + WINDOW}"
    return None


# --- building ----------------------------------------------------------------------------------


def _register(agent_id: str, key: Any) -> BenchAgent:
    return register_agent(
        agent_id, organization=ORGANIZATION, capability="bench.replay", max_concurrency=1, key=key
    )


def _world() -> tuple[BenchAgent, BenchAgent]:
    """The group, a coordinator (writer) and an observer (reader), through the services."""
    services.organization_create(body={"id": ORGANIZATION, "name": "Replay benchmark"})
    token = services.api_token_create(username=ADMIN, staff=True, label="replay benchmark")
    admin = services.authenticate_bearer(token).caller
    services.group_create(body={"id": GROUP, "organization": ORGANIZATION, "name": GROUP})
    writer = _register("replay-writer", generate_private_key())
    reader = _register("replay-reader", generate_private_key())
    for agent, role in ((writer, "coordinator"), (reader, "observer")):
        outcome = services.membership_grant(
            group_id=GROUP, admin=admin, body={"principal": agent.principal, "roles": [role]}
        )
        agent.membership_epochs[GROUP] = outcome.body["result"]["epoch"]
    writer.open_session()
    return writer, reader


def _write(writer: BenchAgent) -> None:
    submit_command(group_id=GROUP, document=mission_create(writer, GROUP), caller=writer.caller)


def generated_rows(
    template: dict[str, Any], *, after: int, prev_hash: str, count: int, start: datetime
) -> Iterator[tuple[Any, ...]]:
    """``count`` events chained after (``after``, ``prev_hash``), cloned from ``template``:
    COPY rows of ``ledger_event``; the last row's hash is the new head's."""
    payload = template["payload"]
    for sequence in range(after + 1, after + count + 1):
        recorded = start + timedelta(microseconds=sequence)
        command_id = f"cmd-replay-{sequence:07d}"
        document = {
            "event_id": f"evt_{uuid.uuid4().hex}",
            "group": template["group"],
            "sequence": sequence,
            "type": template["type"],
            "command_id": command_id,
            "actor": template["actor"],
            "recorded_at": format_timestamp(recorded),
            "payload": {**payload, "mission": f"m-replay-{sequence:07d}"},
            "prev_hash": prev_hash,
        }
        document["hash"] = prev_hash = event_hash(document)
        yield (
            template["group"],
            sequence,
            document["event_id"],
            document["type"],
            command_id,
            document["actor"],
            recorded,
            document["hash"],
            canonical_bytes(document).decode("utf-8"),
        )


def _copy(rows: list[tuple[Any, ...]]) -> None:
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: COPY is not in Django's cursor API
        with raw.copy(f"COPY ledger_event ({COPY_COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _bulk_append(count: int, log: Callable[[str], None]) -> int:
    """Generate and COPY ``count`` events after the head, under its lock; returns count."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT head_sequence, head_hash, clock_timestamp() FROM ledger_grouplog "
                "WHERE group_id = %s FOR UPDATE",
                [GROUP],
            )
            head, head_hash, now = cursor.fetchone()
        template = Event.objects.get(group_id=GROUP, sequence=head).as_wire()
        assert template["type"] == "mission.created", template["type"]
        rows: list[tuple[Any, ...]] = []
        last_hash, last_sequence = head_hash, head
        mark = time.perf_counter()
        for row in generated_rows(
            template, after=head, prev_hash=head_hash, count=count, start=now
        ):
            rows.append(row)
            if len(rows) >= COPY_ROWS:
                _copy(rows)
                last_sequence, last_hash = rows[-1][1], rows[-1][7]
                rows = []
                if last_sequence % 100_000 < COPY_ROWS:
                    rate = (last_sequence - head) / (time.perf_counter() - mark)
                    log(f"replay build: {last_sequence:,} events ({rate:,.0f}/s)")
        if rows:
            _copy(rows)
            last_sequence, last_hash = rows[-1][1], rows[-1][7]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE ledger_grouplog SET head_sequence = %s, head_hash = %s WHERE group_id = %s",
                [last_sequence, last_hash, GROUP],
            )
    return count


def populate(events: int, log: Callable[[str], None]) -> tuple[BenchAgent, int]:
    """The group with ``events`` events: its world and first ``mission.create`` through the
    write path, the bulk generated after it, the last command through the write path again
    (which appends only after a consistent head). Returns the reader and how many events
    were generated."""
    writer, reader = _world()
    _write(writer)  # the template: a mission.created the write path stored
    before = GroupLog.objects.get(group_id=GROUP).head_sequence
    generated = _bulk_append(events - before - 1, log)
    _write(writer)
    return reader, generated


def verify_chain(group: str) -> tuple[int, str]:
    """Every event of ``group`` in order chains from the zero hash, and ends at the head row;
    returns (head, head hash). Raises ``AssertionError`` naming the first break."""
    log = GroupLog.objects.get(group_id=group)
    last: dict[str, Any] = {"sequence": 0, "hash": ZERO_HASH}

    def documents() -> Iterator[dict[str, Any]]:
        for text in (
            Event.objects.filter(group_id=group)
            .order_by("sequence")
            .values_list("document", flat=True)
            .iterator(chunk_size=10_000)
        ):
            document = json.loads(text)
            last["sequence"], last["hash"] = document.get("sequence"), document.get("hash")
            yield document

    broken = first_chain_break(documents())
    assert broken is None, f"the chain of {group} breaks at sequence {broken}"
    assert (last["sequence"], last["hash"]) == (log.head_sequence, log.head_hash), (
        f"the chain ends at {last['sequence']}, the head row says {log.head_sequence}"
    )
    return log.head_sequence, log.head_hash


def _table_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('ledger_event')")
        return int(cursor.fetchone()[0])


def build(url: str, events: int, log: Callable[[str], None]) -> BuiltGroup:
    """A fresh database holding one valid ``events``-event group; saved for reuse."""
    connection.close()
    reset_database(url)
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    reader, generated = populate(events, log)
    build_s = time.perf_counter() - started
    log(f"replay build: {generated:,} events generated in {build_s:.0f} s; vacuum, verify")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) ledger_event")  # hint bits now, not in a replay
    mark = time.perf_counter()
    head, head_hash = verify_chain(GROUP)
    verify_s = time.perf_counter() - mark
    built = BuiltGroup(
        database=database_name(url),
        group=GROUP,
        head=head,
        head_hash=head_hash,
        generated=generated,
        reader_id=reader.id,
        reader_seed=private_key_seed(reader.key).hex(),
        built_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        build_s=build_s,
        verify_s=verify_s,
        check=f"built by this run; every event chain-checked ({verify_s:.0f} s)",
        check_s=verify_s,
    )
    path = _state_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(built), indent=2) + "\n")
    return built


def prepare(url: str, events: int, log: Callable[[str], None]) -> BuiltGroup:
    """The saved group if it still checks out, else a new one."""
    saved = _load_state(url, events) if database_exists(url) else None
    if saved is not None:
        call_command("migrate", verbosity=0)
        mark = time.perf_counter()
        why = check_cached(saved)
        if why is None:
            saved.reused = True
            saved.check_s = time.perf_counter() - mark
            saved.check = (
                f"reused from {saved.built_at} (fully chain-checked then, "
                f"{saved.verify_s:.0f} s); this run: row count and sequence range against "
                f"the head row, the last hash, {SAMPLE_WINDOWS} random windows of {WINDOW + 1} "
                f"events chain-checked ({saved.check_s:.1f} s)"
            )
            log(f"replay: reusing {saved.head:,} events of {saved.database} ({saved.check})")
            return saved
        log(f"replay: cannot reuse {saved.database}: {why}; building again")
    log(f"replay: building a {events:,}-event group in {database_name(url)}")
    return build(url, events, log)


# --- replaying ---------------------------------------------------------------------------------


def _reader(built: BuiltGroup) -> BenchAgent:
    reader = BenchAgent(built.reader_id, private_key_from_seed(bytes.fromhex(built.reader_seed)))
    reader.open_session()
    return reader


def keyset_read(url: str, built: BuiltGroup, *, way: str) -> ReplayRun:
    """The ceiling: the group's rows in keyset pages by raw psycopg (see the docstring).

    The statement is prepared on the server from its first execution (``prepare=True``), so
    every page is one Bind/Execute round trip, as a hand-written reader would do it. Only
    this process's CPU is counted; there is no ASGI server in this read.
    """
    events, after = 0, 0
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cursor:
        client = time.process_time()
        started = time.perf_counter()
        while after < built.head:
            rows = cursor.execute(
                KEYSET_PAGE, (built.group, after, PAGE_LIMIT), prepare=True
            ).fetchall()
            if not rows or rows[0][0] != after + 1:
                raise RuntimeError(f"the keyset read of {built.group} stops after {after}")
            events += len(rows)
            after = rows[-1][0]
        seconds = time.perf_counter() - started
        client_cpu_s = time.process_time() - client
    assert (events, after) == (built.head, built.head), (events, after, built.head)
    return ReplayRun(
        way=way,
        events=events,
        seconds=seconds,
        server_cpu_s=0.0,  # no ASGI server: PostgreSQL's backend alone, not counted here
        client_cpu_s=client_cpu_s,
        requests=events // PAGE_LIMIT + (1 if events % PAGE_LIMIT else 0),
    )


def replay_stream(
    ws_url: str, token: str, built: BuiltGroup, pids: Sequence[int] = (), *, batch: bool = False
) -> ReplayRun:
    """One socket from sequence 0 to the head; ``pids``: the server's processes, whose CPU
    is counted; ``batch``: ``EVENTS`` frames (wire.md §7) instead of one frame per event."""
    cpu, client = cpu_seconds(pids), time.process_time()
    events, seconds, last = asyncio.run(
        replay_count(ws_url, token, built.group, built.head, batch=batch)
    )
    assert (events, last) == (built.head, built.head), (events, last, built.head)
    return ReplayRun(
        way="stream_batched" if batch else "stream",
        events=events,
        seconds=seconds,
        server_cpu_s=cpu_seconds(pids) - cpu,
        client_cpu_s=time.process_time() - client,
    )


def _next_after(body: bytes) -> int:
    """``next_after`` from the end of a page (``…],"head":H,"next_after":K}``, as the events
    view writes it), without decoding the events: the client takes each page as the keyset
    read takes rows, into Python and no further, as the stream's client counts frames."""
    match = PAGE_END.search(body, max(0, len(body) - 64))
    return int(match.group(2)) if match else int(json.loads(body)["next_after"])


def _check_page(body: bytes, after: int, next_after: int) -> None:
    """A page decoded whole holds exactly the events after+1..next_after, in order."""
    sequences = [event["sequence"] for event in json.loads(body)["events"]]
    assert sequences == list(range(after + 1, next_after + 1)), (after, next_after)


def _served_ahead(http: KeepAlive) -> int:
    """How many pages the server has answered from a read ahead, from its ``/metrics``."""
    match = SERVED_AHEAD.search(_ok(http.get("/metrics"), "/metrics"))
    return int(float(match.group(1))) if match else 0


def _ok(answer: tuple[int, bytes], path: str) -> bytes:
    """The body of a 200 answer to ``path``; anything else stops the replay."""
    status, body = answer
    if status != 200:
        raise RuntimeError(f"GET {path}: HTTP {status}: {body[:200]!r}")
    return body


def replay_rest(
    base_url: str, token: str, built: BuiltGroup, pids: Sequence[int] = ()
) -> ReplayRun:
    """Page after page on one keep-alive connection; ``pids`` as for the stream. The log has
    no gaps (wire.md §4), so a page holds ``next_after - after`` events; the first and the
    last page are decoded whole to check it. The server reads each next page ahead while
    this reader takes the current one (docs/protocol.md); how many of the pages it served
    so is read from its ``/metrics`` before and after, outside the timing.

    The reader is the standard library's ``http.client`` (``KeepAlive``), as for the command
    figures: it shares the two cores with the server and PostgreSQL, and ``httpx`` spent
    ~1.2 ms of CPU on each 650 KB page (1.2 s per million events, section 8 on 2026-12-05),
    time taken from the server the figure is meant to measure."""
    page_s: list[float] = []
    events, after = 0, 0
    http = KeepAlive(base_url, token)
    try:
        served_before = _served_ahead(http)
        cpu, client = cpu_seconds(pids), time.process_time()
        started = time.perf_counter()
        while after < built.head:
            mark = time.perf_counter()
            path = f"/api/v1/groups/{built.group}/events?after={after}&limit={PAGE_LIMIT}"
            body = _ok(http.get(path), path)
            next_after = _next_after(body)
            page_s.append(time.perf_counter() - mark)
            if next_after <= after:
                raise RuntimeError(f"no progress after {after}: {body[:200]!r}")
            if after == 0 or next_after >= built.head:
                _check_page(body, after, next_after)
            events += next_after - after
            after = next_after
        seconds = time.perf_counter() - started
        server_cpu_s, client_cpu_s = cpu_seconds(pids) - cpu, time.process_time() - client
        served_ahead = _served_ahead(http) - served_before
    finally:
        http.close()
    assert (events, after) == (built.head, built.head), (events, after, built.head)
    ordered = sorted(s * 1000 for s in page_s)
    return ReplayRun(
        way="rest",
        events=events,
        seconds=seconds,
        server_cpu_s=server_cpu_s,
        client_cpu_s=client_cpu_s,
        requests=len(page_s),
        request_ms={"p50": percentile(ordered, 0.5), "p99": percentile(ordered, 0.99)},
        served_ahead=served_ahead,
    )


def measure_replay(
    config: BenchConfig, events: int, *, log: Callable[[str], None] = lambda message: None
) -> ReplayResult:
    """Prepare the group in ``config.database_url``; read it by raw keyset pages (the
    ceiling), replay it over the stream, then REST, then read it by keyset pages again."""
    started_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    built = prepare(config.database_url, events, log)
    built.table_bytes = _table_bytes()
    reader = _reader(built)
    result = ReplayResult(
        built=built,
        runs=[],
        servers=1,
        server=config.server,
        started_at=started_at,
        load_before=load_average(),
        git_revision=_git_revision(),
    )

    def done(run: ReplayRun, what: str) -> None:
        result.runs.append(run)
        log(f"replay: {what} {run.events:,} events in {run.seconds:.1f} s ({run.rate:,.0f}/s)")

    one_server = dataclasses.replace(config, servers=1)
    with running_servers(one_server) as urls:
        pids = server_pids()
        ws_url = urls[0].replace("http://", "ws://") + "/ws/v1/stream"
        done(keyset_read(config.database_url, built, way=KEYSET_WAYS[0]), "raw keyset read")
        done(replay_stream(ws_url, reader.token, built, pids), "stream")
        done(replay_stream(ws_url, reader.token, built, pids, batch=True), "stream (batch)")
        done(replay_rest(urls[0], reader.token, built, pids), "REST")
        done(keyset_read(config.database_url, built, way=KEYSET_WAYS[1]), "raw keyset read")
    for run in result.runs[1:4]:
        log(f"replay: {run.way} at {result.ratio(run):.2f}x the raw keyset read")
    result.load_after = load_average()
    return result
