"""A mission's budget usage over time (``Mission.usage_series``): a point per charge, bounded,
rebuilt identically by a replay and carried by a snapshot (R10.1-01(g), R11.5-12, R16-10).
Pure: no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from missionweave.protocol import decider, snapshots
from missionweave.protocol import states as S
from missionweave.protocol.facts import Fact
from missionweave.protocol.missions.model import mission_key
from missionweave.protocol.missions.usage import USAGE_SERIES_LIMIT, with_point

from .deciders import GROUP
from .test_work_refusals import body, driver_of
from .work_scenarios import MISSION, story_in


def test_each_charge_adds_a_point_of_cumulative_use() -> None:
    """R11.5-12: after each ``work.usage`` the mission's series holds [sequence, recorded_at,
    {dimension: used so far}]."""
    story = story_in(S.ACTIVE)
    assert story.driver.mission(MISSION)["usage_series"] == []
    first = story.do("work.usage")
    story.run(body(story.call("work.usage"), usage={"tokens": 300, "money": 0.5}))
    series = story.driver.mission(MISSION)["usage_series"]
    assert [point[2] for point in series] == [
        {"tokens": 1200},
        {"tokens": 1500, "money": 0.5},
    ]
    assert series[0][0] < series[1][0]
    assert series[0][1].endswith("Z")
    assert first.types == ["work.usage_recorded"]


def test_a_charge_of_nothing_adds_no_point() -> None:
    """``used`` did not change, so the chart has nothing new to show."""
    story = story_in(S.ACTIVE)
    story.run(body(story.call("work.usage"), usage={"tokens": 0}))
    assert story.driver.mission(MISSION)["usage_series"] == []


def test_the_series_is_bounded_keeping_the_first_and_the_latest() -> None:
    """Past the limit every other point goes; the first and the latest always stay."""
    series: tuple = ()
    for sequence in range(1, 1001):
        series = with_point(series, sequence, "2026-11-30T10:00:00Z", {"tokens": sequence})
        assert len(series) <= USAGE_SERIES_LIMIT
        assert series[0][0] == 1
        assert series[-1][0] == sequence
    sequences = [point[0] for point in series]
    assert sequences == sorted(set(sequences))
    assert len(series) > USAGE_SERIES_LIMIT // 2


@given(st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=400))
def test_a_replay_builds_the_same_series_and_a_snapshot_carries_it(amounts: list[int]) -> None:
    """R16-10: folding the same charges again gives the same series; a snapshot's
    projections restore it unchanged."""
    created = Fact(
        "mission.created",
        {"mission": "m-1", "goal": "g", "budgets": {}},
        "user:olga",
        1,
        "c1",
        "2026-11-30T10:00:00Z",
        GROUP,
    )
    charges = [
        Fact(
            "work.usage_recorded",
            {"work_item": "wi-1", "usage": {"tokens": amount}, "charged_missions": ["m-1"]},
            "agent:w2",
            sequence,
            f"c{sequence}",
            "2026-11-30T10:00:00Z",
            GROUP,
        )
        for sequence, amount in enumerate(amounts, start=2)
    ]
    runs = []
    for _ in range(2):
        state: dict = {}
        decider.apply(state, created, [mission_key("m-1")])
        for fact in charges:
            decider.apply(state, fact, [mission_key("m-1")])
        runs.append(state[mission_key("m-1")])
    assert runs[0] == runs[1]
    mission = runs[0]
    points = sum(1 for amount in amounts if amount)
    assert len(mission.usage_series) <= USAGE_SERIES_LIMIT
    if points <= USAGE_SERIES_LIMIT:
        assert len(mission.usage_series) == points
    restored = snapshots.restore(snapshots.projections_of({mission_key("m-1"): mission}))
    assert restored[mission_key("m-1")] == mission
    if mission.usage_series:
        assert mission.usage_series[-1][2]["tokens"] == sum(amounts)


def test_a_snapshot_of_a_story_restores_the_missions_series() -> None:
    """R16-10: the story's mission, with its series, round-trips through a snapshot."""
    story = story_in(S.ACTIVE)
    story.do("work.usage")
    state = driver_of(story).scenario.state
    restored = snapshots.restore(snapshots.projections_of(state))
    assert restored == {key: value for key, value in state.items() if value is not None}
    assert restored[mission_key(MISSION)].usage_series


def test_an_older_snapshot_without_a_series_restores_an_empty_one() -> None:
    """wire§7 grows additively: a snapshot made before the series existed still restores."""
    story = story_in(S.ACTIVE)
    projections = snapshots.projections_of(driver_of(story).scenario.state)
    del projections["mission"][MISSION]["usage_series"]
    restored = snapshots.restore(projections)
    assert restored[mission_key(MISSION)].usage_series == ()
