"""A handler is handed its item's context packages (R13.3-01..03, R13.3-05; issue 35 §7),
against the in-process authority that decides with the real protocol core."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from missionweave.client.errors import ApiError
from missionweave.protocol import states as S
from missionweave.worker.context_packages import MISSING
from missionweave.worker.handlers import Progress, TaskResult
from missionweave.worker.slots import SlotContext
from tests.protocol.work_scenarios import COORDINATOR, Call
from tests.worker.fake_work import summarise
from tests.worker.runtime_world import World, world

ALPHA = "g-alpha"
MISSION = f"m-{ALPHA}"  # the fake's one mission of the group


class Recorder:
    """A handler that keeps what its slot handed it, then does the quick fake work."""

    def __init__(self) -> None:
        self.packages: list[tuple[Mapping[str, Any], ...]] = []
        self.contexts: list[Mapping[str, Any]] = []

    def __call__(self, ctx: SlotContext, progress: Progress) -> TaskResult:
        self.packages.append(ctx.context_packages)
        self.contexts.append(ctx.mission_context)
        return summarise(ctx, progress)


def _publish(w: World, package_id: str, mission: str, work_items: list[str], **extra: Any) -> None:
    log = w.authority.groups[ALPHA]
    package = {
        "id": package_id,
        "version": 1,
        "mission": mission,
        "work_items": work_items,
        "event_range": [1, log.scenario.sequence],
        "artifacts": [],
        "decisions": ["one summary per incident"],
        "constraints": ["no customer names"],
        "open_questions": [],
        "generator": COORDINATOR,
        "created_at": "2026-12-03T09:00:00Z",
        **extra,
    }
    log.driver.run(Call("context.publish", COORDINATOR, {"package": package}))


def test_a_handler_is_handed_the_packages_of_its_mission_read_only(tmp_path: Path) -> None:
    """R13.3-02, R13.3-05: the latest version of each package of the item's mission, with
    whether its scope names the item; another mission's package is not handed."""
    recorder = Recorder()
    with world(tmp_path, handlers={"text.summarise": recorder}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.story(ALPHA, "wi-2")
        w.authority.groups[ALPHA].driver.run(
            Call("mission.create", COORDINATOR, {"mission": "m-other", "goal": "g", "budgets": {}})
        )
        _publish(w, "ctx-a", MISSION, ["wi-2"])
        _publish(w, "ctx-a", MISSION, ["wi-1", "wi-2"], version=2, decisions=["weekly digest"])
        _publish(w, "ctx-b", MISSION, [])
        _publish(w, "ctx-other", "m-other", [])
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)

    (handed,) = recorder.packages
    assert [(p["id"], p["version"], p["names_this_item"]) for p in handed] == [
        ("ctx-a", 2, True),
        ("ctx-b", 1, False),
    ]
    first = handed[0]
    assert (first["mission"], first["decisions"], first["constraints"]) == (
        MISSION,
        ("weekly digest",),
        ("no customer names",),
    )
    assert first["digest"].startswith("sha256:")
    with pytest.raises(TypeError):
        first["decisions"] = ("changed",)  # type: ignore[index]
    assert MISSING not in recorder.contexts[0]


def test_packages_that_cannot_be_read_do_not_stop_the_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packages are context, not inputs: when the authority refuses the read, the handler
    runs with none and the mission context says why."""
    recorder = Recorder()
    with world(tmp_path, handlers={"text.summarise": recorder}) as w:

        def refuse(group: str, params: Mapping[str, Any]) -> dict[str, Any]:
            raise ApiError(404, "NOT_FOUND", "no such endpoint")

        monkeypatch.setattr(w.authority, "_contexts", refuse)
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)

    assert recorder.packages == [()]
    assert "NOT_FOUND" in recorder.contexts[0][MISSING]
