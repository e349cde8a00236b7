"""WorkItems named in sentences by their goals (``apps.dashboard.item_names``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.dashboard.item_names import SHOWN, item_named, item_names, mission_named
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.factories import build_world


def test_items_are_named_by_goal_by_id_without_one_and_the_rest_counted() -> None:
    titles = {"a": "Gather the sources", "b": "Write it up", "c": ""}
    assert item_names(["a", "b", "c"], titles) == "“Gather the sources”, “Write it up”, c"
    ids = [f"wi-{n}" for n in range(SHOWN + 2)]
    assert item_names(ids) == "wi-0, wi-1, wi-2, wi-3, wi-4 and 2 more"


def test_two_items_with_one_goal_are_told_apart_by_their_ids() -> None:
    titles = {"a": "Check it", "b": "Check it", "c": "Ship it"}
    assert item_names(["a", "b", "c"], titles) == "“Check it” (a), “Check it” (b), “Ship it”"


@given(
    st.lists(st.from_regex(r"wi-[a-z0-9]{1,8}", fullmatch=True), min_size=1, unique=True),
    st.dictionaries(st.from_regex(r"wi-[a-z0-9]{1,8}", fullmatch=True), st.text(max_size=80)),
)
def test_every_named_item_is_said_once_and_the_count_adds_up(
    ids: list[str], titles: dict[str, str]
) -> None:
    """Whatever the goals, the first ``SHOWN`` items are each said and the rest counted."""
    said = item_names(ids, titles)
    rest = len(ids) - SHOWN
    assert said.endswith(f" and {rest} more") == (rest > 0)
    named = said.removesuffix(f" and {rest} more") if rest > 0 else said
    for item in ids[:SHOWN]:
        goal = " ".join(titles.get(item, "").split())
        assert (goal[:50] if goal else item) in named
    assert "“”" not in named  # a blank goal is no name


@pytest.mark.django_db
def test_one_item_or_mission_is_named_by_its_goal_and_by_id_when_it_has_none() -> None:
    """The flash after a decision ("Approved revision 1 of “…”") names the work as people
    know it; work the group does not hold is named by the id the form sent."""
    world = build_world("g-names")
    mission = wf.mission(world)
    item = wf.authorize(world, mission, contract=example_contract(goal="Gather the sources"))
    assert item_named(world.group, item) == "“Gather the sources”"
    assert mission_named(world.group, mission) == "“Summarise the incident reports of November”"
    assert item_named(world.group, "wi-gone") == "wi-gone"
    assert mission_named(world.group, "m-gone") == "m-gone"
