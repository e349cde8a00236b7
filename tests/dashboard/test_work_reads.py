"""The work reads that must stay fast in a group of ~100,000 WorkItems (issue 13): the
WorkItem page's "needed by" list, and the group page's bounded approval queue.

They are read here directly (``apps.dashboard.work``), against the rows real commands left,
and compared with what the slower reads they replace give: a scan of every item's
``depends_on``, and a preview of each waiting item's grant (``preview.refusal``). The plans
are asked of PostgreSQL, where the suite runs (migration ``work.0008`` adds the indexes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.dashboard.work import (
    APPROVALS_SHOWN,
    GRANT_EXECUTION,
    Dependency,
    Viewer,
    approval_queue,
    grant_body,
    is_waiting_for_approval,
    viewer_of,
    work_item_page,
)
from apps.ledger import preview
from apps.ledger.projections import load_view
from apps.work.models import WorkItem
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.memberships import membership_key
from tests.dashboard import workflows as wf
from tests.factories import HumanPersona, World, grant, group, human, unique

pytestmark = pytest.mark.django_db

#: items that depend on nothing, around the few that do: enough for an index to pay off
UNRELATED = 40


@pytest.fixture
def petra(world: World) -> HumanPersona:
    """A second mission_owner (olga is the first): a quorum of two needs both."""
    persona = human("petra")
    grant(world.alice, world.group, persona, "mission_owner")
    return persona


def viewer(persona: HumanPersona, group_id: str) -> Viewer:
    """The viewer the group page builds for ``persona`` from their membership."""
    key = membership_key(persona.principal)
    return viewer_of(persona.caller, load_view(group_id, [key])[key])


def other_group(world: World) -> World:
    """A second group of the same organisation, where w1 coordinates too."""
    other = group(unique("g-other"), world.org)
    grant(world.alice, other, world.w1, "coordinator")
    return dataclasses.replace(world, group=other)


def scanned_needed_by(group_id: str, work_item_id: str) -> tuple[Dependency, ...]:
    """What "needed by" is by definition: every item of the group whose ``depends_on`` names
    ``work_item_id``, in authorisation order (the scan the page must no longer do)."""
    rows = WorkItem.objects.filter(group_id=group_id).order_by("id")
    return tuple(
        Dependency(row.work_item_id, row.state)
        for row in rows
        if work_item_id in row.to_state().depends_on
    )


def plan_of(sql: str) -> str:
    """PostgreSQL's plan for ``sql``, with fresh statistics and sequential scans priced out:
    a test group is far too small for an index to be worth it, so this asks whether the
    query *can* use the index (its expressions match the index's), which is what keeps it
    fast when the group is large. ``SET LOCAL`` ends with the test's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {WorkItem._meta.db_table}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(line for (line,) in cursor.fetchall())


def queries_of(context: CaptureQueriesContext, marker: str) -> list[str]:
    return [query["sql"] for query in context.captured_queries if marker in query["sql"]]


def refusal_terms(refusal: ProtocolError | None) -> tuple[Any, ...] | None:
    if refusal is None:
        return None
    return (refusal.code, refusal.message, refusal.requirement, refusal.details)


# --- needed by ----------------------------------------------------------------------------


def test_needed_by_lists_the_groups_dependents_from_every_mission_and_no_other_group(
    world: World, petra: HumanPersona
) -> None:
    """R10.4-03: the WorkItem page lists the items that depend on this one, with their
    states, in authorisation order: from its own mission and from others of the group, never
    from another group (where the same id may name another item)."""
    m1, m2 = wf.mission(world), wf.mission(world)
    base = wf.queued(world, m1)
    sibling = wf.authorize(world, m1)
    first = wf.authorize(world, m1, depends_on=(base,))
    wf.authorize(world, m1, depends_on=(sibling,))  # depends on something else
    across = wf.authorize(world, m2, depends_on=(sibling, base))
    wf.offer(world, across)
    elsewhere = other_group(world)
    em = wf.mission(elsewhere)
    wf.authorize(elsewhere, em, item=base)  # the same id, another group's item
    wf.authorize(elsewhere, em, depends_on=(base,))

    page = work_item_page(world.group, base, viewer=viewer(petra, world.group))

    assert page is not None
    assert page.needed_by == (Dependency(first, "open"), Dependency(across, "offered"))
    assert page.needed_by == scanned_needed_by(world.group, base)
    assert work_item_page(world.group, first, viewer=viewer(petra, world.group)).needed_by == ()


def test_needed_by_is_answered_by_the_depends_on_index(world: World, petra: HumanPersona) -> None:
    """The page asks a JSON containment of ``data -> 'depends_on'``, which the GIN index
    ``work_item_depends_on`` answers, rather than reading every item of the group (~2 s at
    100,000 items). As in a large group, few of the items depend on this one."""
    m = wf.mission(world)
    base = wf.authorize(world, m)
    for _ in range(UNRELATED):
        wf.authorize(world, m)
    wf.authorize(world, m, depends_on=(base,))

    with CaptureQueriesContext(connection) as context:
        work_item_page(world.group, base, viewer=viewer(petra, world.group))

    [query] = queries_of(context, "@>")
    assert "'depends_on'" in query
    plan = plan_of(query)
    assert "work_item_depends_on" in plan, plan
    assert "Seq Scan" not in plan, plan


# --- the approval queue ---------------------------------------------------------------------


def test_the_queue_holds_exactly_the_items_waiting_for_approval(
    world: World, petra: HumanPersona
) -> None:
    """R10.2-06: queued, gated and short of the quorum for the current revision — the items
    ``is_waiting_for_approval`` names, counted exactly;
    not ungated, not yet queued, fully approved, refused (it waits for a corrected contract,
    issue 34 §4), nor other groups' items."""
    m = wf.mission(world)
    none_yet = wf.queued(world, m, contract=wf.gated_contract(2))
    half = wf.queued(world, m, contract=wf.gated_contract(2))
    wf.approve(world.olga, world.group, half)
    wf.queued(world, m)  # ungated
    full = wf.queued(world, m, contract=wf.gated_contract(1))
    wf.approve(world.olga, world.group, full)
    wf.offer(world, wf.authorize(world, m, contract=wf.gated_contract(1)))  # not queued yet
    refused = wf.queued(world, m, contract=wf.gated_contract(2))
    wf.submit(
        petra,
        world.group,
        "approval.refuse_execution",
        {"work_item": refused, "contract_revision": 1, "comment": "Too risky"},
    )
    elsewhere = other_group(world)
    grant(world.alice, elsewhere.group, world.w2, "worker")
    wf.queued(elsewhere, wf.mission(elsewhere), contract=wf.gated_contract(2))
    everyone = viewer(petra, world.group)

    queue = approval_queue(world.group, viewer=everyone, shown=100)

    waiting = [
        row.work_item_id
        for row in WorkItem.objects.filter(group_id=world.group).order_by("id")
        if is_waiting_for_approval(row.to_state())
    ]
    assert waiting == [none_yet, half]
    assert refused not in waiting
    assert [view.item.id for view in queue.views] == waiting
    assert queue.total == 2


def test_the_queue_shows_the_oldest_and_counts_them_all(world: World, petra: HumanPersona) -> None:
    """The group page shows the first ``shown`` waiting items in authorisation order, and
    how many wait in all."""
    m = wf.mission(world)
    items = [wf.queued(world, m, contract=wf.gated_contract(2)) for _ in range(4)]

    queue = approval_queue(world.group, viewer=viewer(petra, world.group), shown=3)

    assert queue.total == 4
    assert [view.item.id for view in queue.views] == items[:3]
    assert queue.more == 1
    assert APPROVALS_SHOWN == 10
    assert len(approval_queue(world.group, viewer=viewer(petra, world.group)).views) == 4


def test_each_shown_item_carries_the_refusal_a_single_preview_gives(
    world: World, petra: HumanPersona
) -> None:
    """R10.2-06: the batch previews the viewer's grant of each shown item as
    ``preview.refusal`` does one: accepted, SELF_APPROVAL for the one who asked for it,
    DUPLICATE_APPROVAL after their own grant; FORBIDDEN for an observer."""
    m = wf.mission(world)
    proposal = unique("p")
    wf.submit(world.olga, world.group, "work.propose", {"proposal": proposal, "title": "Please"})
    asked = wf.queued(world, m, contract=wf.gated_contract(2), proposal=proposal)
    approved = wf.queued(world, m, contract=wf.gated_contract(2))
    wf.approve(world.olga, world.group, approved)
    fresh = wf.queued(world, m, contract=wf.gated_contract(2))
    maria = human("maria")
    grant(world.alice, world.group, maria, "observer")

    expected_codes = {
        "olga": ["SELF_APPROVAL", "DUPLICATE_APPROVAL", None],
        "petra": [None, None, None],
        "maria": ["FORBIDDEN", "FORBIDDEN", "FORBIDDEN"],
    }
    for persona in (world.olga, petra, maria):
        queue = approval_queue(world.group, viewer=viewer(persona, world.group))
        assert [view.item.id for view in queue.views] == [asked, approved, fresh]
        singles = [
            preview.refusal(persona.caller, world.group, GRANT_EXECUTION, grant_body(view.item))
            for view in queue.views
        ]
        assert [refusal_terms(view.approval_refusal) for view in queue.views] == [
            refusal_terms(single) for single in singles
        ]
        codes = [r.code.value if r is not None else None for r in singles]
        assert codes == expected_codes[persona.username]
    olga_queue = approval_queue(world.group, viewer=viewer(world.olga, world.group))
    assert [view.asked_by_viewer for view in olga_queue.views] == [True, False, False]
    assert [view.shows_approval_form for view in olga_queue.views] == [False, False, True]


def test_the_queue_reads_a_fixed_number_of_queries_however_many_wait(
    world: World, petra: HumanPersona
) -> None:
    """Counting and the previews are batched: three or nine waiting items (each depending
    on another item) cost the same queries, where a preview per item cost four each."""
    m = wf.mission(world)
    base = wf.queued(world, m)

    def add_waiting(count: int) -> None:
        for _ in range(count):
            item = wf.authorize(world, m, contract=wf.gated_contract(2), depends_on=(base,))
            wf.accept(world, item, wf.offer(world, item))

    def queries() -> int:
        page_viewer = viewer(petra, world.group)
        with CaptureQueriesContext(connection) as context:
            queue = approval_queue(world.group, viewer=page_viewer, shown=3)
        assert len(queue.views) == 3
        assert all(view.dependencies == (Dependency(base, "queued"),) for view in queue.views)
        return len(context.captured_queries)

    add_waiting(3)
    few = queries()
    add_waiting(6)
    many = queries()

    assert approval_queue(world.group, viewer=viewer(petra, world.group)).total == 9
    assert few == many
    assert many <= 6


def test_the_queue_is_counted_and_paged_from_its_partial_index(
    world: World, petra: HumanPersona
) -> None:
    """Counting the waiting items and reading the oldest are answered by the partial index
    ``work_item_waiting_approval``, without reading the contract of every queued item (the
    query's expressions match the index's predicate); the one condition the index does not
    hold, "not refused", is checked on the index's own rows only."""
    m = wf.mission(world)
    for _ in range(2):
        wf.queued(world, m, contract=wf.gated_contract(2))
    wf.queued(world, m)

    with CaptureQueriesContext(connection) as context:
        approval_queue(world.group, viewer=viewer(petra, world.group))

    counted, paged = queries_of(context, "jsonb_array_length")
    assert "COUNT(" in counted
    assert "LIMIT" in paged
    for query in (counted, paged):
        plan = plan_of(query)
        assert "work_item_waiting_approval" in plan, plan
        filters = [line for line in plan.splitlines() if "Filter:" in line]
        assert all("refusal" in line for line in filters), plan  # the rest is the predicate
