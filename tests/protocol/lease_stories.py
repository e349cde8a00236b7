"""Stories over time for the pure tests of leases, retries and budgets (no database).

Built on ``work_scenarios``: a WorkItem is brought where a test needs it by real, decided
commands; the clock of the :class:`PureDriver` is moved explicitly, since every rule here is
about time (a lease runs out, a start deadline passes, a backoff ends). The authority's
commands (``work.reassign``, ``lease.revoke``) are decided like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.facts import Decision
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp

from .work_scenarios import (
    COORDINATOR,
    ROLES,
    SESSION_EPOCH,
    WORKER,
    Call,
    PureDriver,
    WorkStory,
    check_issuer,
    evidence,
    story_in,
    work_contract,
)

#: a worker the coordinator may offer to that never acts in these stories
BYSTANDER = "agent:w4"
MICROSECOND = timedelta(microseconds=1)


@dataclass
class SessionDriver(PureDriver):
    """A :class:`PureDriver` whose agents speak from ``session_epoch`` (a test raises it to
    play the owner's replacement session, R11.3-10)."""

    session_epoch: int = SESSION_EPOCH

    def decide(self, call: Call, *, at: datetime | None = None) -> Decision:
        check_issuer(call.type, call.actor)
        return self.scenario.when(
            call.type,
            call.body,
            actor=call.actor,
            roles=ROLES.get(call.actor, frozenset()),
            session_epoch=self.session_epoch if call.actor.startswith("agent:") else None,
            now=at or self.at,
        )


def driver_of(story: WorkStory) -> SessionDriver:
    assert isinstance(story.driver, SessionDriver)
    return story.driver


def clock(story: WorkStory, moment: datetime) -> None:
    """Move the authority clock of ``story`` to ``moment``."""
    driver_of(story).at = moment


def snapshot(story: WorkStory) -> tuple[int, dict[Any, str]]:
    scenario = driver_of(story).scenario
    return scenario.sequence, {key: repr(value) for key, value in scenario.state.items()}


def refused(
    story: WorkStory, call: Call, code: ErrorCode, requirement: str | None = None
) -> ProtocolError:
    """``call`` is refused with ``code`` (and ``requirement``) and decides nothing."""
    before = snapshot(story)
    with pytest.raises(ProtocolError) as caught:
        driver_of(story).decide(call)
    error = caught.value
    assert error.code is code, error
    if requirement is not None:
        assert error.requirement == requirement, error
    assert snapshot(story) == before, "a refused command decided something"
    return error


def with_body(call: Call, **changes: Any) -> Call:
    return replace(call, body={**call.body, **changes})


def item(story: WorkStory) -> dict[str, Any]:
    view = story.view()
    assert view is not None
    return view


def at_time(text: str) -> datetime:
    return parse_timestamp(text)


def authorized(
    driver: PureDriver | None = None, *, contract: dict[str, Any] | None = None, **story: Any
) -> WorkStory:
    """A WorkItem just authorised (``open``, never offered)."""
    told = story_in(
        S.PROPOSAL, driver or SessionDriver(), contract=contract or work_contract(), **story
    )
    told.do("work.authorize")
    return told


def offered(
    workers: tuple[str, ...] = (WORKER,),
    *,
    mode: str = "urgent",
    start_within_s: int | None = None,
    **story: Any,
) -> WorkStory:
    """An authorised WorkItem offered to ``workers`` (``start_within_s`` on the offer)."""
    told = authorized(**story)
    call = told.call("work.offer", workers=workers, mode=mode)
    if start_within_s is not None:
        call = with_body(call, start_within_s=start_within_s)
    told.run(call)
    return told


def active(
    workers: tuple[str, ...] = (WORKER,),
    *,
    lease_ttl_s: int | None = None,
    **options: Any,
) -> WorkStory:
    """``offered`` to ``workers``, accepted by the first one and started: ``active``."""
    told = offered(workers, **options)
    told.do("work.accept_offer", worker=workers[0])
    start = told.call("work.start")
    if lease_ttl_s is not None:
        start = with_body(start, lease_ttl_s=lease_ttl_s)
    told.run(start)
    return told


def reassign(story: WorkStory, reason: str, *, epoch: int | None = None) -> Call:
    body = {"work_item": story.item, "ownership_epoch": epoch or story.epoch, "reason": reason}
    return Call("work.reassign", AUTHORITY, body)


def revoke(story: WorkStory, *, session_epoch: int = 2, lease_id: str | None = None) -> Call:
    body = {
        "work_item": story.item,
        "lease_id": lease_id or story.lease_id,
        "session_epoch": session_epoch,
    }
    return Call("lease.revoke", AUTHORITY, body)


def owner_fail(story: WorkStory, *, permanent: bool | None = None, **changes: Any) -> Call:
    """The owner's ``work.fail`` under its current lease (R10.2-13, R11.3-04)."""
    body: dict[str, Any] = {
        "work_item": story.item,
        "lease_id": story.lease_id,
        "evidence": [evidence("c1", story.owner_actor, verdict="fail")],
        **changes,
    }
    if permanent is not None:
        body["permanent"] = permanent
    return Call("work.fail", story.owner_actor, body)


def coordinator_fail(story: WorkStory) -> Call:
    failure = evidence("c1", COORDINATOR, verdict="fail")
    return Call("work.fail", COORDINATOR, {"work_item": story.item, "evidence": [failure]})


def in_state(state: str, **story: Any) -> WorkStory:
    """``work_scenarios.story_in`` on a :class:`SessionDriver`."""
    return story_in(state, SessionDriver(), **story)
