"""Section 10 of ``docs/benchmarks.md``: the dashboard's server time.

It sits between its own markers, so ``--only dashboard`` replaces it alone and a full
``make bench`` (which does not measure it) carries it over from the existing report. The
interpretation is prose kept next to this module (``dashboard_interpretation.md``) and
copied in.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .splice import DASHBOARD_BEGIN as BEGIN
from .splice import DASHBOARD_END as END
from .splice import carry_over_block, splice_block

if TYPE_CHECKING:
    from .dashboard import DashboardResult, PageResult

HERE = Path(__file__).resolve().parent
INTERPRETATION = HERE / "dashboard_interpretation.md"
#: issues 12's, 13's and 37's must-hold, p95 server time in ms (repeated here so rendering needs no
#: Django)
TARGET_MS = 150.0
PLAN_LINES = 40
SQL_CHARS = 160


def _ms(value: float) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _row(page: PageResult) -> str:
    who = f"`{page.username}`"
    if not page.built:
        why = page.error or ("not built yet (404)" if page.status == 404 else f"HTTP {page.status}")
        return f"| {page.name} | {who} | {why} | | | | | | | |"
    p95 = page.stat("p95")
    verdict = ("yes" if p95 <= TARGET_MS else "**no**") if page.must_hold else "—"
    return (
        f"| {page.name} | {who} | {len(page.ms)} | {_ms(page.stat('p50'))} | {_ms(p95)} | "
        f"{_ms(page.stat('max'))} | {page.queries} | {_ms(page.sql_ms)} | {page.kb:,.0f} | "
        f"{verdict} |"
    )


def _verdict(result: DashboardResult) -> str:
    held = [page for page in result.pages if page.must_hold]
    missing = [page.name for page in held if not page.built]
    slow = [page.name for page in held if page.built and page.stat("p95") > TARGET_MS]
    if missing:
        return (
            f"Not all the pages of the must-hold are measurable yet ({', '.join(missing)}); "
            f"of those that are, {len(slow)} exceed {TARGET_MS:.0f} ms at p95"
            + (f": {', '.join(slow)}." if slow else ".")
        )
    if slow:
        return f"The must-hold (p95 ≤ {TARGET_MS:.0f} ms) is **not met** by: {', '.join(slow)}."
    return (
        f"The must-hold is met: every page marked *yes* ({', '.join(p.name for p in held)}) "
        f"answers within {TARGET_MS:.0f} ms at p95."
    )


def _live(result: DashboardResult) -> list[str]:
    """What a live update costs, next to the size of the group it was measured in."""
    live = [page for page in result.pages if getattr(page, "live", False) and page.built]
    if not live:
        return []
    missions = result.sizes.get("missions", 0)
    rows = "; ".join(f"{page.name}: {page.kb * 1024:,.0f} bytes" for page in live)
    return [
        f"**Bytes per live update** (the *live update* rows; the group holds {missions:,} "
        f"missions): {rows}. A live page asks for the rows its events touched and nothing "
        "else, so these figures depend on how many rows an event touches, never on how many "
        "missions the group holds; before issue 13 every open group page fetched the whole "
        "work section (251 KB after twenty minutes of the demo) on each update.",
        "",
    ]


def _reach(result: DashboardResult) -> list[str]:
    reach = result.reach
    if not reach:
        return []
    held = reach["reached"] == reach["sampled"] and reach["search_form"] and reach["lists_linked"]
    return [
        f"**Every mission reachable in ≤ 3 clicks** ({'held' if held else '**not held**'}): "
        f"of {reach['sampled']} missions sampled from the group's {reach['missions']:,} (the "
        f"oldest, the newest and {reach['sampled'] - 2} at random), {reach['reached']} were "
        "found by the group page's search box (click 1: Search, by the mission's id) and "
        "linked from the results (click 2: the mission); the search answered in "
        f"{_ms(reach['search_p50_ms'])} ms at p50 and {_ms(reach['search_p95_ms'])} ms at "
        "p95. The group page also links the whole list (click 1), whose pager goes to any "
        "page (click 2) that links the mission (click 3)."
        + (f" Not reached: {', '.join(reach['unreached'])}." if reach["unreached"] else ""),
        "",
    ]


def _slowest_queries(result: DashboardResult) -> list[str]:
    lines = []
    for page in result.pages:
        if page.built and page.slowest:
            query = page.slowest[0]
            sql = " ".join(query["sql"].split())
            text = sql if len(sql) <= SQL_CHARS else sql[:SQL_CHARS] + " …"
            lines.append(f"- {page.name}: {_ms(query['ms'])} ms — `{text}`")
    return [*lines, ""] if lines else []


def _explain(explain: dict[str, Any], first: bool) -> list[str]:
    plan = explain["plan"].splitlines()
    if len(plan) > PLAN_LINES:
        plan = [*plan[:PLAN_LINES], f"… ({len(plan) - PLAN_LINES} more lines)"]
    which = "The slowest page at p95 is the" if first else "Over the target: the"
    return [
        f"{which} {explain['page']} ({_ms(explain['p95'])} ms); its slowest query "
        f"({_ms(explain['ms'])} ms when captured), run again under "
        "`EXPLAIN (ANALYZE, BUFFERS)`:",
        "",
        "```sql",
        explain["sql"],
        "```",
        "",
        "```",
        *plan,
        "```",
        "",
    ]


def section(result: DashboardResult, command: str) -> list[str]:
    built, facts = result.built, result.facts
    tables = built.get("table_bytes", {})
    sizes = ", ".join(f"`{name}` {size / 2**20:,.0f} MiB" for name, size in tables.items())
    states = ", ".join(f"{count:,} {state}" for state, count in built.get("states", {}).items())
    size = max(2, built["template"][1] - built["template"][0] + 1)
    ready_range = built.get("ready") or []
    ready_events = ready_range[1] - ready_range[0] + 1 if ready_range else 0
    ready = ready_events // (size - 1)
    generated = built["generated"]
    missions = (generated - ready_events) // size
    inbox = result.sizes.get("owner_inbox", {})
    waiting = (
        f" The mission owner's inbox holds {sum(inbox.values()):,} waiting entries ("
        + ", ".join(f"{count:,} {name}" for name, count in inbox.items())
        + ")."
        if inbox
        else ""
    )
    return [
        BEGIN,
        "",
        f"## 10. The dashboard's server time: a {built['items']:,}-item mission in a "
        f"{built['head']:,}-event group"
        + (
            f" of {result.sizes['missions']:,} missions and {result.sizes['work_items']:,} "
            "WorkItems"
            if result.sizes
            else ""
        ),
        "",
        f"- **Command:** `{command}`",
        f"- **Measured:** {result.started_at}, revision `{result.git_revision}` (plus "
        f"uncommitted changes, if any), load average {result.load_before} before and "
        f"{result.load_after} after (1/5/15 min)",
        f"- **Machine:** {facts.get('nproc', '?')} CPUs ({facts.get('cpu', '?')}), "
        f"{facts.get('memory', '?')}, Python {facts.get('python', '?')}, Django "
        f"{facts.get('django', '?')}, PostgreSQL {facts.get('postgresql_server_version', '?')} "
        f"(shared_buffers {facts.get('postgresql_shared_buffers', '?')}), the harness "
        "and PostgreSQL on the same machine",
        f"- **Data:** group `{built['group']}` in database `{built['database']}`, "
        f"{built['head']:,} events. The mission `{built['mission']}` has {built['items']:,} "
        f"WorkItems ({states}), each depending on 0–3 earlier ones, all played through the "
        "write path by a coordinator, six workers, two mission owners and a human reviewer "
        f"(quorum-2 execution approvals, progress reports, usage charges, signed manifests, "
        f"the authority's checks, reviews). The group's history around it — "
        f"{generated:,} events — is {missions:,} finished missions cloned from one played "
        "through the write path (`benchmarks/dashboard_history.py`), appended in "
        f"{len(built['history'])} stretches before, between and after the big mission's "
        "three phases; their projection rows were folded with the protocol's own evolvers"
        + (
            f", and {ready:,} more cloned up to their owner's final approval, which they "
            "wait for (issue 37: the inbox at scale)."
            if ready
            else "."
        )
        + f"{waiting} Sizes with indexes: {sizes}.",
        f"- **Chain and projections:** {built['check']}",
        "",
        "Server time is the whole Django stack in-process (Django's test `Client` logged in "
        "with `force_login` as the person named: middleware, session, view, queries, "
        "template) — no HTTP server, network or browser. Per page: "
        f"{result.warmup} untimed requests, then {result.requests} timed ones in a row "
        "(fewer, at least 3, once a page has taken a minute: the *requests* column), "
        "nearest-rank percentiles; then one more under `CaptureQueriesContext` for the "
        "query count and SQL time (kept apart, so capturing costs the timed requests "
        "nothing). *Must hold* is issues 12's, 13's and 37's p95 ≤ 150 ms; the *live update* rows "
        "are what an open page fetches when events touch its rows.",
        "",
        "| page | as | requests | p50 ms | p95 ms | max ms | queries | SQL ms | KB | must hold |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
        *(_row(page) for page in result.pages),
        "",
        _verdict(result),
        "",
        *_live(result),
        *_reach(result),
        "The slowest query of each page (captured request):",
        "",
        *_slowest_queries(result),
        *(
            line
            for index, explain in enumerate(result.explains)
            for line in _explain(explain, index == 0)
        ),
        *([INTERPRETATION.read_text().rstrip(), ""] if INTERPRETATION.exists() else []),
        END,
        "",
        "",
    ]


def splice_dashboard(document: str, result: DashboardResult, command: str) -> str:
    """``document`` with section 10 replaced (or inserted before *Where the time goes*)."""
    return splice_block(document, BEGIN, END, "\n".join(section(result, command)))


def carry_over_dashboard(old: str, new: str) -> str:
    """``new`` (a full run's report, without section 10) with ``old``'s section 10 kept."""
    return carry_over_block(old, new, BEGIN, END)
