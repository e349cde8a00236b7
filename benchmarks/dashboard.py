"""``python -m benchmarks.run --only dashboard``: section 10, the dashboard's server time.

Issue 12's must-hold: the inbox, the mission page and the review screen answer in at most
150 ms of server time (p95) with a 1,000-item mission in a 1,000,000-event group. Issue
13's: the group page, the mission list filtered and the WorkItem page do too in a group of
1,000,000 events and ~100,000 WorkItems; the bytes a live update costs do not grow with the
number of missions (the live-rows pages); and every mission is reachable from the group page
in at most three clicks (:func:`reachability`, on a sample of the group's missions). The group
is built once (:mod:`.dashboard_build`) in its own database (``BENCH_DASHBOARD_DATABASE_URL``,
default ``mw_bench_dashboard``) and reused while it checks out.

**Server time** is measured in this process with Django's test ``Client``, logged in with
``force_login`` as the person the page is for: the whole Django stack (middleware, session,
view, queries, template) from request to rendered response, but no HTTP server, network or
browser. Each page gets ``BENCH_DASHBOARD_WARMUP`` untimed requests, then
``BENCH_DASHBOARD_REQUESTS`` timed ones (50; 10 with ``--quick``), one after another, or
fewer (never under :data:`MIN_REQUESTS`) once a page has taken ``BENCH_DASHBOARD_PAGE_S``
seconds (60), so a page that takes seconds does not hold the run for an hour; then
one more under ``CaptureQueriesContext`` for its queries (count, time, the slowest), kept
apart so capturing costs the timed requests nothing. A page that answers 404 is reported as
not built yet, one that raises or answers 5xx with the error, and neither stops the run.
The slowest query of the slowest page, and of each must-hold page over the target, is run
again under ``EXPLAIN (ANALYZE, BUFFERS)``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.dashboard.inbox import inbox_of
from apps.ledger.write_path import Caller
from apps.work.models import Mission, WorkItem
from missionweave.protocol.identifiers import user_principal

from .config import ROOT, BenchConfig
from .dashboard_build import BuiltDashboard, dashboard_size, prepare
from .dashboard_cast import OWNER, REVIEWER, WORKER_1
from .dashboard_report import TARGET_MS, splice_dashboard
from .facts import _git_revision, load_average, machine_facts
from .fresh import log
from .must_holds import splice_must_holds
from .stats import percentile

#: queries listed per page in the raw figures
SLOWEST = 3
#: timed requests a page gets even when it runs out of time
MIN_REQUESTS = 3


@dataclass(frozen=True)
class Page:
    """One page to measure: who asks, and its path given the built group."""

    name: str
    username: str
    path: Callable[[BuiltDashboard], str]
    #: issue 12's or 13's must-hold applies to it
    must_hold: bool = False
    #: a page that existed before issue 12 (the baseline)
    baseline: bool = False
    #: what a live update fetches (its bytes are the point)
    live: bool = False


def _group(built: BuiltDashboard) -> str:
    return f"/groups/{built.group}"


PAGES = (
    Page("inbox (mission owner)", OWNER, lambda b: "/", must_hold=True),
    Page("inbox (reviewer)", REVIEWER, lambda b: "/", must_hold=True),
    Page(
        "mission page",
        OWNER,
        lambda b: f"{_group(b)}/missions/{b.mission}/",
        must_hold=True,
    ),
    Page(
        "review screen (a submitted WorkItem)",
        REVIEWER,
        lambda b: f"{_group(b)}/work-items/{b.targets['review']}/review/",
        must_hold=True,
    ),
    Page(
        "mission graph (its own page, 1,000 nodes)",
        OWNER,
        lambda b: f"{_group(b)}/missions/{b.mission}/graph/",
    ),
    Page("review queue", REVIEWER, lambda b: "/reviews/"),
    Page(
        "approval screen (execution, 1 of 2 given)",
        OWNER,
        lambda b: f"{_group(b)}/work-items/{b.targets['approval']}/approval/",
    ),
    Page(
        "final-approval screen",
        OWNER,
        lambda b: f"{_group(b)}/missions/{b.mission}/final-approval/",
    ),
    Page("group overview", OWNER, lambda b: f"{_group(b)}/", must_hold=True),
    Page(
        "timeline, filtered (the reviewer's events)",
        OWNER,
        lambda b: f"{_group(b)}/timeline/?who={user_principal(REVIEWER)}",
        must_hold=True,
    ),
    Page(
        "timeline, filtered (the big mission's events)",
        OWNER,
        lambda b: f"{_group(b)}/timeline/?mission={b.mission}",
    ),
    Page("timeline, newest page", OWNER, lambda b: f"{_group(b)}/timeline/"),
    Page("agents page", OWNER, lambda b: f"{_group(b)}/agents/", must_hold=True),
    Page("an agent's page (a worker)", OWNER, lambda b: f"{_group(b)}/agents/{WORKER_1}/"),
    Page("people page", OWNER, lambda b: f"{_group(b)}/people/"),
    Page(
        "a person's page (the reviewer)",
        OWNER,
        lambda b: f"{_group(b)}/people/{REVIEWER}/",
    ),
    Page(
        "mission list, filtered (approved, a critical WorkItem)",
        OWNER,
        lambda b: f"{_group(b)}/missions/?state=approved&urgency=critical",
        must_hold=True,
    ),
    Page(
        "mission list, searched (a goal's words)",
        OWNER,
        lambda b: f"{_group(b)}/missions/?q=quarterly+summary",
    ),
    Page(
        "mission list, waiting on me",
        OWNER,
        lambda b: f"{_group(b)}/missions/?waiting=on",
    ),
    Page(
        "mission list, ready for final approval",
        OWNER,
        lambda b: f"{_group(b)}/missions/?ready=on",
    ),
    Page(
        "mission list, its last page",
        OWNER,
        lambda b: f"{_group(b)}/missions/?page=100000",
    ),
    Page(
        "WorkItem list, filtered (cancelled, high urgency)",
        OWNER,
        lambda b: f"{_group(b)}/work-items/?state=cancelled&urgency=high",
    ),
    Page(
        "WorkItem page (an active one)",
        OWNER,
        lambda b: f"{_group(b)}/work-items/{b.targets['active']}/",
        must_hold=True,
        baseline=True,
    ),
    Page(
        "live update: the row of 1 touched WorkItem's mission",
        OWNER,
        lambda b: f"{_group(b)}/live/mission-rows/?work_item={b.targets['active']}",
        live=True,
    ),
    Page(
        "live update: 10 touched missions' rows",
        OWNER,
        lambda b: (
            f"{_group(b)}/live/mission-rows/?"
            + "&".join(f"mission=m-past-{n:06d}" for n in range(1, 11))
        ),
        live=True,
    ),
    Page(
        "live update: 1 WorkItem list row",
        OWNER,
        lambda b: f"{_group(b)}/live/work-item-rows/?work_item={b.targets['active']}",
        live=True,
    ),
    Page(
        "live update: the overview's counts and attention list",
        OWNER,
        lambda b: f"{_group(b)}/overview/section/",
        live=True,
    ),
    Page(
        "live update: the Timeline's 10 newest lines",
        OWNER,
        lambda b: f"{_group(b)}/timeline/lines/?after={b.head - 10}",
        live=True,
    ),
    Page(
        "live update: the approval queue (10 shown)",
        OWNER,
        lambda b: f"{_group(b)}/approval-queue/",
        live=True,
    ),
)


@dataclass
class PageResult:
    name: str
    path: str
    username: str
    must_hold: bool
    baseline: bool
    live: bool = False
    status: int = 0
    error: str = ""  # an exception or 5xx
    ms: list[float] = field(default_factory=list)
    kb: float = 0.0
    queries: int = 0
    sql_ms: float = 0.0
    slowest: list[dict[str, Any]] = field(default_factory=list)  # [{"ms", "sql"}]

    @property
    def built(self) -> bool:
        return self.status != 404 and not self.error and bool(self.ms)

    def stat(self, name: str) -> float:
        ordered = sorted(self.ms)
        if not ordered:
            return float("nan")
        if name == "max":
            return ordered[-1]
        if name == "mean":
            return statistics.fmean(ordered)
        return percentile(ordered, {"p50": 0.5, "p95": 0.95}[name])


@dataclass
class DashboardResult:
    built: dict[str, Any]
    pages: list[PageResult]
    requests: int
    warmup: int
    #: ``EXPLAIN (ANALYZE, BUFFERS)`` of slow pages' slowest queries: {"page", "p95", "sql",
    #: "ms", "plan"}
    explains: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    started_at: str = ""
    load_before: str = ""
    load_after: str = ""
    git_revision: str = ""
    #: the group's missions and WorkItems, counted when measured
    sizes: dict[str, Any] = field(default_factory=dict)
    #: :func:`reachability`'s findings
    reach: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DashboardResult:
        pages = [PageResult(**page) for page in data["pages"]]
        return cls(**{**data, "pages": pages})


def _client(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def _get(client: Client, path: str) -> tuple[int, int]:
    response = client.get(path)
    return response.status_code, len(response.content)


def measure_page(
    page: Page, built: BuiltDashboard, *, requests: int, warmup: int, budget_s: float = 60.0
) -> PageResult:
    """Time one page (see the module's docstring); never raises for the page's sake."""
    path = page.path(built)
    result = PageResult(page.name, path, page.username, page.must_hold, page.baseline, page.live)
    client = _client(page.username)
    try:
        status, size = _get(client, path)
        result.status = status
        if status == 404:
            return result
        if status >= 500:
            result.error = f"HTTP {status}"
            return result
        deadline = time.perf_counter() + budget_s / 4
        for _ in range(warmup):  # the first request above was one too
            if time.perf_counter() > deadline:
                break
            _get(client, path)
        deadline = time.perf_counter() + budget_s
        for _ in range(requests):
            started = time.perf_counter()
            status, size = _get(client, path)
            result.ms.append((time.perf_counter() - started) * 1000)
            if len(result.ms) >= MIN_REQUESTS and time.perf_counter() > deadline:
                break
        result.kb = size / 1024
        with CaptureQueriesContext(connection) as captured:
            _get(client, path)
    except Exception as error:  # a screen still being written must not stop the run
        result.error = f"{type(error).__name__}: {error}"[:300]
        result.ms = []
        traceback.print_exc()
        return result
    queries = [(float(q["time"]) * 1000, q["sql"]) for q in captured.captured_queries]
    result.queries = len(queries)
    result.sql_ms = sum(ms for ms, _sql in queries)
    result.slowest = [
        {"ms": ms, "sql": sql} for ms, sql in sorted(queries, key=lambda q: -q[0])[:SLOWEST]
    ]
    return result


_SERVER_PLACEHOLDER = re.compile(r"\$[0-9]+")


def explain(sql: str) -> str:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of a captured ``SELECT`` (anything else is not run).

    A query whose parameters were bound on the server is captured with ``$1``-style
    placeholders and no values, so it cannot be run again: it is reported, not explained
    (it failed the benchmark's smoke test when such a query happened to be a page's slowest).
    """
    if not sql.lstrip().upper().startswith("SELECT"):
        return "(not a SELECT: not explained)"
    if _SERVER_PLACEHOLDER.search(sql):
        return "(parameters bound on the server: not explained)"
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def _explain_slowest(pages: list[PageResult]) -> list[dict[str, Any]]:
    """The slowest query of the slowest page, and of each must-hold page over the target."""
    measured = [page for page in pages if page.built and page.slowest]
    if not measured:
        return []
    chosen = [max(measured, key=lambda page: page.stat("p95"))]
    chosen += [
        page
        for page in measured
        if page.must_hold and page.stat("p95") > TARGET_MS and page is not chosen[0]
    ]
    return [
        {
            "page": page.name,
            "p95": page.stat("p95"),
            "sql": page.slowest[0]["sql"],
            "ms": page.slowest[0]["ms"],
            "plan": explain(page.slowest[0]["sql"]),
        }
        for page in chosen
    ]


#: missions whose reachability is checked (the oldest, the newest and random others)
REACH_SAMPLE = 50
SEARCH_FORM = re.compile(r'<form method="get" action="([^"]+)" class="filters" role="search"')


def group_sizes(group: str) -> dict[str, Any]:
    return {
        "missions": Mission.objects.filter(group_id=group).count(),
        "work_items": WorkItem.objects.filter(group_id=group).count(),
        "owner_inbox": owner_inbox(),
    }


def owner_inbox() -> dict[str, int]:
    """What waits for the mission owner, section by section, as her inbox counts it."""
    owner = get_user_model().objects.get(username=OWNER)
    inbox = inbox_of(Caller.for_user(owner))
    return {section.title.lower(): section.count for section in inbox.sections}


def reachability(built: BuiltDashboard, *, sample: int = REACH_SAMPLE) -> dict[str, Any]:
    """Issue 13's must-hold, every mission reachable from the group page in at most three
    clicks, checked on a sample as a person would go: the group page's search form (click
    1, its action with the mission's id) and the mission's link in the results (click 2).
    The other way — "All missions", the page that holds it, its link — is three clicks
    whatever the page, as long as the group page links the list and the list pages."""
    client = _client(OWNER)
    group = built.group
    group_page = client.get(f"{_group(built)}/").content.decode()
    form = SEARCH_FORM.search(group_page)
    ids = list(
        Mission.objects.filter(group_id=group)
        .order_by("created_sequence")
        .values_list("mission_id", flat=True)
    )
    chosen = [ids[0], ids[-1], *random.Random(13).sample(ids, min(len(ids), sample) - 2)]
    reached, timings = [], []
    for mission in chosen:
        started = time.perf_counter()
        results = client.get(f"{form.group(1) if form else '/'}?q={mission}").content.decode()
        timings.append((time.perf_counter() - started) * 1000)
        if f'href="{_group(built)}/missions/{mission}/"' in results:
            reached.append(mission)
    return {
        "missions": len(ids),
        "sampled": len(chosen),
        "reached": len(reached),
        "unreached": [m for m in chosen if m not in reached][:5],
        "search_form": bool(form),
        "lists_linked": f'href="{_group(built)}/missions/"' in group_page,
        "search_p50_ms": percentile(sorted(timings), 0.5) if timings else float("nan"),
        "search_p95_ms": percentile(sorted(timings), 0.95) if timings else float("nan"),
    }


def measure_dashboard(
    built: BuiltDashboard,
    *,
    requests: int,
    warmup: int,
    budget_s: float = 60.0,
    pages: tuple[Page, ...] = PAGES,
) -> DashboardResult:
    """Every page of ``pages`` on the built group, one after another."""
    result = DashboardResult(
        built=built.as_dict(),
        pages=[],
        requests=requests,
        warmup=warmup,
        started_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        load_before=load_average(),
        git_revision=_git_revision(),
    )
    for page in pages:
        measured = measure_page(page, built, requests=requests, warmup=warmup, budget_s=budget_s)
        result.pages.append(measured)
        if measured.built:
            log(
                f"dashboard: {page.name}: p50 {measured.stat('p50'):.1f} ms, p95 "
                f"{measured.stat('p95'):.1f} ms over {len(measured.ms)} requests, "
                f"{measured.queries} queries, {measured.kb:.0f} KB"
            )
        else:
            log(f"dashboard: {page.name}: {measured.error or f'not built ({measured.status})'}")
    result.explains = _explain_slowest(result.pages)
    result.sizes = group_sizes(built.group)
    result.reach = reachability(built)
    log(
        f"dashboard: reachability: {result.reach['reached']} of {result.reach['sampled']} "
        f"sampled missions (of {result.reach['missions']:,}) found by the group page's "
        "search and opened: two clicks"
    )
    result.load_after = load_average()
    return result


def run(config: BenchConfig, args: argparse.Namespace) -> int:
    """Prepare the group, measure every page, replace section 10 of the report."""
    quick = args.quick
    command = "python -m benchmarks.run --only dashboard" + (" --quick" if quick else "")
    saved = ROOT / "var" / "benchmarks" / ("dashboard-quick.json" if quick else "dashboard.json")
    if args.render_only:
        data = json.loads(saved.read_text())
        command, result = data["command"], DashboardResult.from_dict(data["dashboard"])
    else:
        events, items = dashboard_size(quick=quick)
        built = prepare(config.database_url, events, items, log)
        result = measure_dashboard(
            built,
            requests=int(os.environ.get("BENCH_DASHBOARD_REQUESTS", "10" if quick else "50")),
            warmup=int(os.environ.get("BENCH_DASHBOARD_WARMUP", "2" if quick else "5")),
            budget_s=float(os.environ.get("BENCH_DASHBOARD_PAGE_S", "60")),
        )
        result.facts = machine_facts(config.database_url)
        saved.parent.mkdir(parents=True, exist_ok=True)
        payload = {"command": command, "dashboard": result.as_dict()}
        saved.write_text(json.dumps(payload, indent=2) + "\n")
    document = config.output.read_text() if config.output.exists() else "# Benchmarks\n"
    config.output.write_text(splice_must_holds(splice_dashboard(document, result, command)))
    log(f"wrote section 10 of {config.output}")
    return 0
