"""Schedule disclosure on the pure core: ``work.disclose_schedule`` → ``work.schedule_disclosed``
(MWP-WRK-012; R0-09, R11.2-01, R11.2-02). No database.

The owner of the current ownership epoch publishes an estimated start window, an estimated
completion, a confidence, its capacity state and its computation time; the WorkItem keeps the
latest as ``schedule`` and does not move. The body has no free text and no field beyond the
declared ones, so another group's identity, content, assignments or queue position have
nowhere to travel — the property tests below try to smuggle them in every way the shape
allows and find each attempt refused.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol import states as S
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.envelope import CLOCK_SKEW
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import is_id
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.schedule import (
    CAPACITY_STATES,
    DISCLOSE,
    DISCLOSED,
    FIELDS,
    disclosure_body,
)

from .deciders import NOW
from .test_work_refusals import LAPSED, body, driver_of, move_clock, refused
from .work_scenarios import COORDINATOR, ITEM, OTHER_WORKER, WORKER, Call, WorkStory, story_in

#: what the projection adds to a disclosure's fields (and ``work_item`` is the key itself)
RECORDED = frozenset({"by", "sequence", "recorded_at"})


def disclose(story: WorkStory, **changes: Any) -> Call:
    """The story's valid disclosure (``work_scenarios``), with ``changes`` to its body."""
    return body(story.call(DISCLOSE), **changes)


def validate(document: dict[str, Any]) -> None:
    COMMANDS[DISCLOSE].validate(document)


def malformed_at(document: dict[str, Any]) -> str:
    """The JSON path a MALFORMED refusal of ``document`` names."""
    with pytest.raises(ProtocolError) as caught:
        validate(document)
    assert caught.value.code is ErrorCode.MALFORMED, caught.value
    return caught.value.details["path"]


def valid_body(**changes: Any) -> dict[str, Any]:
    document = disclosure_body(
        work_item=ITEM,
        ownership_epoch=1,
        earliest_start=NOW,
        latest_start=NOW + timedelta(minutes=30),
        estimated_completion=NOW + timedelta(hours=2),
        confidence=0.8,
        capacity_state="busy",
        computed_at=NOW,
        compute_seconds=0.25,
    )
    return {**document, **changes}


# --- accepted for the owner, wherever it still holds the item -------------------------------


def test_the_owner_discloses_on_acceptance_and_the_item_stays_queued() -> None:
    """R11.2-01 ("on acceptance"): right after ``work.accept_offer`` the new owner publishes
    its estimate by ownership epoch (there is no lease yet); the event's payload is the body,
    and the item keeps it as ``schedule`` with who disclosed it and when."""
    story = story_in(S.OFFERED)
    story.do("work.accept_offer")
    call = story.call(DISCLOSE)
    ran = story.run(call)
    assert ran.types == [DISCLOSED]
    assert ran.events[0][1] == call.body
    item = story.view()
    assert item["state"] == S.QUEUED
    schedule = item["schedule"]
    assert {k: v for k, v in schedule.items() if k not in RECORDED} == {
        k: v for k, v in call.body.items() if k != "work_item"
    }
    assert schedule["by"] == WORKER
    assert schedule["sequence"] == driver_of(story).scenario.sequence
    assert schedule["recorded_at"] == format_timestamp(NOW)


@pytest.mark.parametrize("state", [S.QUEUED, S.ACTIVE, S.BLOCKED])
def test_a_disclosure_moves_nothing_and_the_latest_replaces_the_earlier(state: str) -> None:
    """R11.2-01 ("on material schedule changes"): allowed in queued, active and blocked
    (``states.IN_STATE``); the state, the lease and the owner are untouched, and a second
    disclosure replaces the first."""
    story = story_in(state)
    before = story.view()
    story.run(story.call(DISCLOSE))
    later = disclose(story, confidence=0.3, capacity_state="saturated")
    story.run(later)
    after = story.view()
    unchanged = ("state", "owner", "ownership_epoch", "lease", "start_deadline", "offers")
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}
    assert after["schedule"]["confidence"] == 0.3
    assert after["schedule"]["capacity_state"] == "saturated"


def test_compute_seconds_is_optional() -> None:
    """R0-09 (ambiguous "computation time"): ``computed_at`` is required, the duration is not."""
    story = story_in(S.QUEUED)
    call = story.call(DISCLOSE)
    without = {k: v for k, v in call.body.items() if k != "compute_seconds"}
    story.run(replace(call, body=without))
    assert "compute_seconds" not in story.view()["schedule"]


def test_an_estimate_computed_within_the_skew_window_is_accepted_beyond_it_refused() -> None:
    """R11.2-01: ``computed_at`` says when the worker worked the estimate out, so it may run
    ahead of the authority clock by no more than the envelope's skew (wire.md §3)."""
    story = story_in(S.ACTIVE)
    driver_of(story).decide(disclose(story, computed_at=format_timestamp(NOW + CLOCK_SKEW)))
    ahead = disclose(story, computed_at=format_timestamp(NOW + CLOCK_SKEW + timedelta(seconds=1)))
    error = refused(story, ahead, ErrorCode.MALFORMED, "R11.2-01")
    assert error.details == {"path": "$.computed_at"}


# --- refused for everyone else, and for a stale epoch ---------------------------------------------


@pytest.mark.parametrize("actor", [OTHER_WORKER, COORDINATOR])
def test_a_principal_that_never_owned_the_item_is_forbidden(actor: str) -> None:
    """wire.md §8 precedence, §9 "owner": another worker, or the coordinator, is FORBIDDEN
    and nothing is decided."""
    story = story_in(S.ACTIVE)
    refused(story, replace(story.call(DISCLOSE), actor=actor), ErrorCode.FORBIDDEN, "wire§9")


def test_the_offered_worker_cannot_disclose_before_accepting() -> None:
    """R10.3-02: an offer reserves nothing, so the offered worker is not yet an owner."""
    story = story_in(S.OFFERED)
    refused(story, story.call(DISCLOSE), ErrorCode.FORBIDDEN, "wire§9")


def test_a_fenced_owner_is_stale_and_its_disclosure_leaves_with_it() -> None:
    """R11.3-01: once a new offer fences the owner (its start deadline passed), its
    disclosure is STALE_OWNERSHIP; the schedule it disclosed before is no one's estimate any
    more and is cleared from the item."""
    story = story_in(S.QUEUED)
    story.run(story.call(DISCLOSE))
    move_clock(story, LAPSED)
    story.do("work.offer", workers=(OTHER_WORKER,))
    assert story.view()["schedule"] is None
    error = refused(story, disclose(story), ErrorCode.STALE_OWNERSHIP, "R11.3-01")
    assert error.details["work_item"] == ITEM


def test_the_owner_naming_an_earlier_ownership_epoch_is_stale() -> None:
    """R11.3-01: the same worker, owner again under epoch 2, cannot disclose under epoch 1."""
    story = story_in(S.QUEUED)
    move_clock(story, LAPSED)
    story.do("work.offer", workers=(WORKER,))
    assert story.do("work.accept_offer").result["ownership_epoch"] == 2
    error = refused(story, disclose(story, ownership_epoch=1), ErrorCode.STALE_OWNERSHIP)
    assert (error.requirement, error.details) == ("R11.3-01", {"ownership_epoch": 2})
    story.run(disclose(story, ownership_epoch=2))


@pytest.mark.parametrize("state", [S.SUBMITTED, S.VERIFIED, S.FAILED, S.CANCELLED])
def test_once_the_work_is_done_there_is_no_schedule_to_disclose(state: str) -> None:
    """R10.2-22: outside queued, active and blocked the owner's disclosure is
    ILLEGAL_TRANSITION, nothing decided."""
    story = story_in(state)
    error = refused(story, story.call(DISCLOSE), ErrorCode.ILLEGAL_TRANSITION, "R10.2-22")
    assert error.details["allowed_from"] == sorted({S.QUEUED, S.ACTIVE, S.BLOCKED})


def test_an_item_of_no_group_it_can_see_is_not_found() -> None:
    """wire§4: the item is looked up in this group only."""
    story = story_in(S.ACTIVE)
    error = refused(story, disclose(story, work_item="wi-elsewhere"), ErrorCode.NOT_FOUND)
    assert error.details == {"path": "$.work_item", "work_item": "wi-elsewhere"}


# --- the shape: exactly the declared fields, each in its format -----------------------------------

moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@st.composite
def disclosures(draw: st.DrawFn) -> dict[str, Any]:
    """A valid disclosure of ``ITEM`` under epoch 1, computed no later than ``NOW``."""
    earliest, latest, completion = sorted(draw(st.lists(moments, min_size=3, max_size=3)))
    seconds = draw(
        st.none() | st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
    )
    return disclosure_body(
        work_item=ITEM,
        ownership_epoch=1,
        earliest_start=earliest,
        latest_start=latest,
        estimated_completion=completion,
        confidence=draw(st.floats(0, 1) | st.sampled_from([0, 1])),
        capacity_state=draw(st.sampled_from(CAPACITY_STATES)),
        computed_at=draw(moments.filter(lambda moment: moment <= NOW)),
        compute_seconds=seconds,
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200)
@given(document=disclosures(), name=st.text(min_size=1), value=json_values)
def test_any_field_beyond_the_declared_ones_is_refused(
    document: dict[str, Any], name: str, value: Any
) -> None:
    """R11.2-02 by construction (additionalProperties false): an extra field anywhere — at
    the top or in the start window — is MALFORMED naming it, whatever it holds."""
    validate(document)
    if name not in FIELDS:
        assert malformed_at({**document, name: value}) == f"$.{name}"
    if name not in ("earliest", "latest"):
        window = {**document["estimated_start"], name: value}
        path = malformed_at({**document, "estimated_start": window})
        assert path == f"$.estimated_start.{name}"


TIME_PATHS = (
    ("estimated_start", "earliest"),
    ("estimated_start", "latest"),
    ("estimated_completion",),
    ("computed_at",),
)


def _set(document: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    target = changed
    for name in path[:-1]:
        target = target[name]
    target[path[-1]] = value
    return changed


def _is_timestamp(value: str) -> bool:
    try:
        parse_timestamp(value)
    except ValueError:
        return False
    return True


@settings(max_examples=200)
@given(
    document=disclosures(),
    path=st.sampled_from(TIME_PATHS),
    value=st.text().filter(lambda text: not _is_timestamp(text)) | json_values,
)
def test_a_time_that_is_not_a_wire_timestamp_is_refused(
    document: dict[str, Any], path: tuple[str, ...], value: Any
) -> None:
    """wire.md §1: every time is an RFC 3339 UTC string ending in Z; any other string (or any
    other JSON value) is MALFORMED at its path."""
    if isinstance(value, str) and _is_timestamp(value):
        return
    assert malformed_at(_set(document, path, value)) == "$." + ".".join(path)


@settings(max_examples=200)
@given(document=disclosures(), value=json_values)
def test_a_capacity_state_outside_the_vocabulary_is_refused(
    document: dict[str, Any], value: Any
) -> None:
    """R11.2-01: the capacity state is one of a closed vocabulary, never free text."""
    if value in CAPACITY_STATES:
        return
    assert malformed_at({**document, "capacity_state": value}) == "$.capacity_state"


@settings(max_examples=200)
@given(document=disclosures(), value=json_values)
def test_a_work_item_that_is_not_an_id_is_refused(document: dict[str, Any], value: Any) -> None:
    """wire.md §1: the item is named by an id, never by text."""
    if is_id(value):
        return
    assert malformed_at({**document, "work_item": value}) == "$.work_item"


@settings(max_examples=200)
@given(
    document=disclosures(),
    confidence=json_values | st.floats(),
    seconds=json_values | st.floats(),
)
def test_confidence_and_compute_seconds_are_bounded_numbers(
    document: dict[str, Any], confidence: Any, seconds: Any
) -> None:
    """R11.2-01: confidence is a number from 0 to 1; compute_seconds a non-negative number
    (a bool, NaN or infinity is not one)."""
    number = (int, float)
    good_confidence = (
        isinstance(confidence, number) and not isinstance(confidence, bool) and 0 <= confidence <= 1
    )
    if not good_confidence:
        assert malformed_at({**document, "confidence": confidence}) == "$.confidence"
    good_seconds = (
        isinstance(seconds, number)
        and not isinstance(seconds, bool)
        and 0 <= seconds < float("inf")
    )
    if not good_seconds:
        assert malformed_at({**document, "compute_seconds": seconds}) == "$.compute_seconds"


@settings(max_examples=200)
@given(document=disclosures(), times=st.lists(moments, min_size=3, max_size=3))
def test_the_windows_are_accepted_only_in_order(
    document: dict[str, Any], times: list[datetime]
) -> None:
    """R11.2-01: ``earliest ≤ latest ≤ estimated_completion``; any other order is
    MALFORMED."""
    earliest, latest, completion = times
    changed = {
        **document,
        "estimated_start": {
            "earliest": format_timestamp(earliest),
            "latest": format_timestamp(latest),
        },
        "estimated_completion": format_timestamp(completion),
    }
    if earliest <= latest <= completion:
        validate(changed)
    else:
        expected = "$.estimated_start" if latest < earliest else "$.estimated_completion"
        assert malformed_at(changed) == expected


@pytest.mark.parametrize("name", [*FIELDS[:-1], "earliest", "latest"])
def test_every_required_field_is_required(name: str) -> None:
    """wire.md §9 body: each declared field but ``compute_seconds`` is required."""
    document = valid_body()
    if name in ("earliest", "latest"):
        window = {k: v for k, v in document["estimated_start"].items() if k != name}
        assert malformed_at({**document, "estimated_start": window}) == f"$.estimated_start.{name}"
    else:
        assert malformed_at({k: v for k, v in document.items() if k != name}) == f"$.{name}"


# --- the must-hold: nothing of another group can be published (R11.2-02) --------------------------

#: how a worker serving two groups could try to let the other one's data ride along
SMUGGLING = (
    "none",  # a clean disclosure
    "top_level_field",  # {"group": "g-other-…"}, {"queue_position": 17}, …
    "window_field",  # inside estimated_start
    "as_work_item",  # naming the other group's item
    "as_capacity_state",  # the other group's goal as the capacity
    "as_timestamp",  # the other group's name where a time goes
)
FIELD_NAMES = ("group", "mission", "goal", "assignments", "queue_position", "notes", "other")

ids = st.from_regex(r"[A-Za-z0-9._:-]{1,20}", fullmatch=True)


@st.composite
def other_groups(draw: st.DrawFn) -> dict[str, Any]:
    """A second group's identity, content, assignments and queue position, marked ``other``
    so a leak can be found by substring (no legitimate value of ``ITEM`` contains it)."""
    return {
        "group": "g-other-" + draw(ids),
        "organisation": "Other Org " + draw(st.text(min_size=1, max_size=30)),
        "mission": "m-other-" + draw(ids),
        "work_items": draw(st.lists(ids.map("wi-other-".__add__), min_size=1, max_size=3)),
        "goal": "Other goal: " + draw(st.text(min_size=1, max_size=80)),
        "assignee": "agent:other-" + draw(ids),
        "queue_position": draw(st.integers(2, 10**6)),
    }


@cache
def _queued_story() -> WorkStory:
    """One queued item owned by ``WORKER`` under epoch 1; deciding never changes it."""
    return story_in(S.QUEUED)


def _smuggled(document: dict[str, Any], other: dict[str, Any], how: str, name: str) -> dict:
    """``document`` carrying what ``other`` holds under ``name``, the way ``how`` says."""
    payload = {
        "group": other["group"],
        "mission": other["mission"],
        "goal": other["goal"],
        "assignments": {other["assignee"]: other["work_items"]},
        "queue_position": other["queue_position"],
        "notes": other["organisation"],
        "other": other,
    }[name]
    if how == "top_level_field":
        return {**document, name: payload}
    if how == "window_field":
        return {**document, "estimated_start": {**document["estimated_start"], name: payload}}
    if how == "as_work_item":
        return {**document, "work_item": other["work_items"][0]}
    if how == "as_capacity_state":
        return {**document, "capacity_state": other["goal"]}
    if how == "as_timestamp":
        return {**document, "computed_at": other["organisation"]}
    return document


@settings(max_examples=300, deadline=None)
@given(
    document=disclosures(),
    other=other_groups(),
    how=st.sampled_from(SMUGGLING),
    name=st.sampled_from(FIELD_NAMES),
)
def test_a_published_schedule_never_contains_another_groups_ids_names_or_content(
    document: dict[str, Any], other: dict[str, Any], how: str, name: str
) -> None:
    """The must-hold of issue 14 (R11.2-02, R0-09, MWP-WRK-012): whatever a worker puts in a
    disclosure, an accepted one's event payload holds only the declared fields, with this
    item's id, its epoch, wire timestamps, a confidence, a capacity state of the vocabulary
    and a number of seconds — and none of the other group's ids, names, goal, assignments or
    queue position. Every attempt to carry them is refused (MALFORMED, or NOT_FOUND for an
    item of another group) and decides nothing."""
    story = _queued_story()
    call = Call(DISCLOSE, WORKER, _smuggled(document, other, how, name))
    if how != "none":
        with pytest.raises(ProtocolError) as caught:
            driver_of(story).decide(call)
        expected = ErrorCode.NOT_FOUND if how == "as_work_item" else ErrorCode.MALFORMED
        assert caught.value.code is expected, caught.value
        return
    decision = driver_of(story).decide(call)
    [event] = decision.events
    assert event.type == DISCLOSED
    payload = event.payload
    assert set(payload) <= set(FIELDS)
    assert set(payload["estimated_start"]) == {"earliest", "latest"}
    assert payload["work_item"] == ITEM
    assert payload["ownership_epoch"] == 1
    assert payload["capacity_state"] in CAPACITY_STATES
    for moment in (*payload["estimated_start"].values(), payload["estimated_completion"]):
        assert _is_timestamp(moment)
    assert _is_timestamp(payload["computed_at"])
    published = json.dumps(payload, ensure_ascii=False)
    for leaked in (other["group"], other["organisation"], other["mission"], other["goal"]):
        assert leaked not in published
    assert not any(item in published for item in other["work_items"])
    assert other["assignee"] not in published
    assert "other" not in published.lower()


@settings(max_examples=100, deadline=None)
@given(document=disclosures())
def test_the_projection_keeps_only_the_declared_fields_and_who_disclosed_when(
    document: dict[str, Any],
) -> None:
    """R11.2-02 on the read side: the WorkItem's ``schedule`` is the payload's declared
    fields plus ``by``, ``sequence`` and ``recorded_at`` — nothing else reaches the page."""
    story = story_in(S.QUEUED)
    story.run(Call(DISCLOSE, WORKER, document))
    schedule = story.view()["schedule"]
    assert set(schedule) <= (set(FIELDS) - {"work_item"}) | RECORDED
    assert schedule["by"] == WORKER
