"""Admission judges a replaced dependency by its replacement (R10.2-21, R10.4-03), as the
authority's ``work.start`` does, against the in-process authority."""

from __future__ import annotations

from pathlib import Path

from missionweave.protocol.examples import example_contract
from tests.protocol.work_scenarios import COORDINATOR, DEADLINE, Call, WorkStory, work_contract
from tests.worker.fake_work import summarise
from tests.worker.runtime_world import World, world

ALPHA = "g-alpha"


def _waiting_on(w: World, item: str, dependency: str) -> None:
    """``item`` in the group's mission, depending on ``dependency``."""
    log = w.authority.groups[ALPHA]
    story = WorkStory(log.driver, item=item, mission=f"m-{ALPHA}", contract=work_contract())
    story.do("work.authorize", depends_on=[dependency])
    log.stories[item] = story


def _offered_and_judged(w: World, item: str) -> None:
    w.authority.offer(ALPHA, item)
    w.until(lambda: bool(w.sent("work.accept_offer") or w.sent("work.reject_offer")))


def test_a_cancelled_dependency_is_refused_at_admission(tmp_path: Path) -> None:
    """R10.4-03: under ``all_verified`` a cancelled dependency can never be met."""
    with world(tmp_path, handlers={"text.summarise": summarise}) as w:
        w.authority.story(ALPHA, "wi-a")
        w.authority.do(ALPHA, "wi-a", "work.cancel")
        _waiting_on(w, "wi-b", "wi-a")
        _offered_and_judged(w, "wi-b")
        (rejected,) = w.sent("work.reject_offer")
        assert rejected.body["reason"] == "dependency"


def test_a_replaced_dependency_is_judged_by_its_replacement(tmp_path: Path) -> None:
    """R10.2-21: once ``wi-a2`` replaces the cancelled ``wi-a``, an item depending on
    ``wi-a`` is accepted: its dependency can be met again."""
    with world(tmp_path, handlers={"text.summarise": summarise}) as w:
        w.authority.story(ALPHA, "wi-a")
        w.authority.do(ALPHA, "wi-a", "work.cancel")
        body = {
            "work_item": "wi-a2",
            "mission": f"m-{ALPHA}",
            "contract": example_contract(deadline=DEADLINE),
            "depends_on": [],
            "replaces": "wi-a",
        }
        w.authority.groups[ALPHA].driver.run(Call("work.authorize", COORDINATOR, body))
        _waiting_on(w, "wi-b", "wi-a")
        _offered_and_judged(w, "wi-b")
        assert w.sent("work.reject_offer") == []
        assert [s.body["work_item"] for s in w.sent("work.accept_offer")] == ["wi-b"]
