"""Capability tokens in the pure core: the claims decided, ``capability.issue`` and the check.

Given a WorkItem brought to a state by real commands (``work_scenarios``), the claims that
``work.start``, ``lease.renew`` and ``capability.issue`` decide are bound to the lease and
expire with it (R11.3-06, R11.3-08); narrowing and rotation follow R11.3-07; and
``check_claims`` refuses a token once its lease is replaced, closed, expired or its id
revoked. Signing is the write path's (``tests/api/test_capabilities.py``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol import capabilities as caps
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.facts import Decision
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import LEASE_TTL
from missionweave.protocol.work.items import WorkItem, work_item_key

from .deciders import GROUP, NOW
from .work_scenarios import ITEM, WORKER, Call, PureDriver, WorkStory, story_in, work_contract

ALLOWED = work_contract()["allowed"]


def driver_of(story: WorkStory) -> PureDriver:
    assert isinstance(story.driver, PureDriver)
    return story.driver


def item_of(story: WorkStory) -> WorkItem:
    item = driver_of(story).scenario.state[work_item_key(story.item)]
    assert isinstance(item, WorkItem)
    return item


def with_body(call: Call, **changes: Any) -> Call:
    return replace(call, body={**call.body, **changes})


def decided(story: WorkStory, call: Call) -> Decision:
    """Decide ``call``, then run it (the same decision: command ids are deterministic)."""
    decision = driver_of(story).decide(call)
    story.run(call)
    return decision


def only_token(decision: Decision) -> dict[str, Any]:
    assert len(decision.capabilities) == 1
    return decision.capabilities[0]


def started(**story: Any) -> tuple[WorkStory, dict[str, Any]]:
    """An item started by its owner (checkpointed once, so the start is ours to watch)."""
    told = story_in(S.QUEUED, **story)
    return told, only_token(decided(told, told.call("work.start")))


def refused(story: WorkStory, call: Call, code: ErrorCode, requirement: str) -> ProtocolError:
    driver = driver_of(story)
    before = (driver.scenario.sequence, repr(driver.scenario.state))
    with pytest.raises(ProtocolError) as caught:
        driver.decide(call)
    assert (caught.value.code, caught.value.requirement) == (code, requirement), caught.value
    assert (driver.scenario.sequence, repr(driver.scenario.state)) == before
    return caught.value


def check_fails(
    claims: dict[str, Any], story: WorkStory, code: ErrorCode, requirement: str, **kw: Any
) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        caps.check_claims(claims, item_of(story), kw.pop("now", NOW), **kw)
    assert (caught.value.code, caught.value.requirement) == (code, requirement), caught.value
    return caught.value


# --- the claims of work.start and lease.renew ----------------------------------------------------


def test_work_start_decides_one_token_bound_to_the_new_lease() -> None:
    """R11.3-06: the token names the group, WorkItem, lease id, ownership epoch and holder;
    its scope is the contract's ``allowed`` (R10.1-01(d)); R11.3-08: it expires with the lease."""
    story, claims = started()
    lease = item_of(story).lease
    assert lease is not None
    assert claims["lease_id"] == lease.lease_id == story.lease_id
    assert (claims["group"], claims["work_item"], claims["sub"]) == (GROUP, ITEM, WORKER)
    assert claims["ownership_epoch"] == story.epoch == 1
    assert claims["session_epoch"] == lease.session_epoch
    assert claims["aud"] == caps.AUDIENCE
    assert claims["scope"] == ALLOWED
    assert claims["iat"] == caps.numeric_date(NOW)
    assert claims["exp"] == caps.numeric_date(parse_timestamp(lease.expires_at))
    assert caps.from_numeric_date(claims["exp"]) <= parse_timestamp(lease.expires_at)
    assert claims["jti"].startswith("cap_")
    caps.check_claims(claims, item_of(story), NOW)


def test_token_ids_are_derived_from_the_command() -> None:
    """R11.3-06: a replayed command names the same token; another command another one."""
    story = story_in(S.QUEUED)
    call = story.call("work.start")
    first = only_token(driver_of(story).decide(call))
    again = only_token(driver_of(story).decide(call))
    assert first == again
    story.run(call)
    renewed = only_token(decided(story, story.call("lease.renew")))
    assert renewed["jti"] != first["jti"]


def test_lease_renew_decides_a_token_reaching_the_new_expiry() -> None:
    """R11.3-08: the renewal's token expires with the renewed lease, not later; the lease
    keeps its id, so the start's token stays valid until its own exp (R11.3-06)."""
    story, start_token = started()
    driver = driver_of(story)
    driver.at = NOW + timedelta(minutes=4)
    renewed = only_token(decided(story, story.call("lease.renew", lease_id=story.lease_id)))
    lease = item_of(story).lease
    assert lease is not None
    assert renewed["lease_id"] == start_token["lease_id"]
    assert renewed["exp"] == caps.numeric_date(parse_timestamp(lease.expires_at))
    assert renewed["exp"] == caps.numeric_date(NOW + timedelta(minutes=4) + LEASE_TTL)
    caps.check_claims(start_token, item_of(story), driver.at)
    check_fails(start_token, story, ErrorCode.STALE_LEASE, "R11.3-08", now=NOW + LEASE_TTL)
    caps.check_claims(renewed, item_of(story), NOW + LEASE_TTL + timedelta(minutes=1))


# --- capability.issue: narrowing and rotation (R11.3-07) -----------------------------------------


def test_issue_without_scope_gives_the_full_contract_scope() -> None:
    """R11.3-07: a rotation; the event records id, scope, expiry and revocations, never the
    token itself."""
    story, _ = started()
    decision = decided(story, story.call("capability.issue"))
    claims = only_token(decision)
    assert claims["scope"] == ALLOWED
    [event] = decision.events
    assert event.type == caps.ISSUED
    assert event.payload == {
        "work_item": ITEM,
        "lease_id": story.lease_id,
        "token_id": claims["jti"],
        "scope": ALLOWED,
        "expires_at": caps.expires_at(claims),
        "revokes": [],
    }
    assert decision.result["lease"]["lease_id"] == story.lease_id


def test_a_narrowed_scope_within_the_contract_is_issued() -> None:
    """R11.3-07: narrowing to a subset of the contract's allowed lists."""
    story, _ = started(contract=work_contract(allowed={
        "tools": ["search", "fetch"], "data": ["incidents", "hr"], "operations": ["read", "write"],
    }))  # fmt: skip
    scope = {"tools": ["fetch"], "data": [], "operations": ["read", "read"]}
    claims = only_token(decided(story, with_body(story.call("capability.issue"), scope=scope)))
    assert claims["scope"] == {"tools": ["fetch"], "data": [], "operations": ["read"]}
    caps.check_claims(claims, item_of(story), NOW, wants={"tool": "fetch", "operation": "read"})
    check_fails(claims, story, ErrorCode.FORBIDDEN, "R11.5-05", wants={"tool": "search"})
    check_fails(claims, story, ErrorCode.FORBIDDEN, "R11.5-05", wants={"data": "incidents"})


@pytest.mark.parametrize(
    ("scope", "path"),
    [
        ({"tools": ["search", "shell"], "data": [], "operations": []}, "$.scope.tools"),
        ({"tools": [], "data": ["payroll"], "operations": []}, "$.scope.data"),
        ({"tools": [], "data": [], "operations": ["delete"]}, "$.scope.operations"),
    ],
)
def test_a_scope_wider_than_the_contract_is_forbidden(scope: dict, path: str) -> None:
    """R11.3-07: tokens are narrowed, never widened past the contract (R10.1-01(d))."""
    story, _ = started()
    call = with_body(story.call("capability.issue"), scope=scope)
    error = refused(story, call, ErrorCode.FORBIDDEN, "R11.3-07")
    assert error.details["path"] == path


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"scope": ["search"]}, "$.scope"),
        ({"scope": {"tools": ["search"], "data": []}}, "$.scope.operations"),
        ({"scope": {"tools": "search", "data": [], "operations": []}}, "$.scope.tools"),
        ({"scope": {"tools": [""], "data": [], "operations": []}}, "$.scope.tools[0]"),
        ({"scope": {"tools": [], "data": [], "operations": [], "x": []}}, "$.scope.x"),
        ({"revoke": "cap_1"}, "$.revoke"),
        ({"revoke": ["ok", "not an id"]}, "$.revoke[1]"),
        ({"ttl_s": 0}, "$.ttl_s"),
        ({"ttl_s": 3601}, "$.ttl_s"),
        ({"ttl_s": True}, "$.ttl_s"),
        ({"ttl_s": 1.5}, "$.ttl_s"),
        ({"token": "x"}, "$.token"),
    ],
)
def test_a_malformed_issue_body_is_malformed(changes: dict, path: str) -> None:
    """wire§3 step 9: the body's shape is checked before any rule, naming the bad field."""
    body = {"work_item": ITEM, "lease_id": "lease-1", **changes}
    with pytest.raises(ProtocolError) as caught:
        caps.validate_issue(body)
    assert caught.value.code is ErrorCode.MALFORMED
    assert caught.value.details["path"] == path


def test_rotation_revokes_the_named_tokens_on_the_lease() -> None:
    """R11.3-07: a rotation's ``revoke`` ids are recorded on the lease; those tokens are
    refused from then on while the new one (and any not named) stays valid."""
    story, start_token = started()
    first = only_token(decided(story, story.call("capability.issue")))
    call = with_body(story.call("capability.issue"), revoke=[start_token["jti"]])
    rotated = only_token(decided(story, call))
    lease = item_of(story).lease
    assert lease is not None
    assert lease.revoked_tokens == (start_token["jti"],)
    check_fails(start_token, story, ErrorCode.FORBIDDEN, "R11.3-07")
    caps.check_claims(first, item_of(story), NOW)
    caps.check_claims(rotated, item_of(story), NOW)


@pytest.mark.parametrize(("ttl_s", "capped"), [(60, True), (3600, False)])
def test_ttl_shortens_a_token_but_never_past_the_lease(ttl_s: int, capped: bool) -> None:
    """R11.3-08: ``ttl_s`` may only shorten a token; the lease's expiry is the ceiling."""
    story, _ = started()
    claims = only_token(decided(story, with_body(story.call("capability.issue"), ttl_s=ttl_s)))
    lease_end = caps.numeric_date(NOW + LEASE_TTL)
    assert claims["exp"] == (caps.numeric_date(NOW) + ttl_s if capped else lease_end)


@settings(max_examples=60, deadline=None)  # each example decides a whole story
@given(
    ttl_s=st.one_of(st.none(), st.integers(caps.MIN_TOKEN_TTL_S, caps.MAX_TOKEN_TTL_S)),
    lease_ttl_s=st.integers(1, 3600),
    after_us=st.integers(0, 10**6 * 3600),
)
def test_no_token_outlives_its_lease(ttl_s: int | None, lease_ttl_s: int, after_us: int) -> None:
    """R11.3-08: whatever the TTLs and the moment of issue, exp <= the lease's expiry then."""
    story = story_in(S.QUEUED)
    start = with_body(story.call("work.start"), lease_ttl_s=lease_ttl_s)
    tokens = [only_token(decided(story, start))]
    driver = driver_of(story)
    driver.at = NOW + timedelta(microseconds=after_us % (lease_ttl_s * 10**6))
    issue = story.call("capability.issue")
    if ttl_s is not None:
        issue = with_body(issue, ttl_s=ttl_s)
    tokens.append(only_token(decided(story, issue)))
    lease = item_of(story).lease
    assert lease is not None
    for claims in tokens:
        assert caps.from_numeric_date(claims["exp"]) <= parse_timestamp(lease.expires_at)


# --- capability.issue is an owner's command under a live lease -----------------------------------


def test_issue_with_an_earlier_lease_id_is_stale() -> None:
    """R11.3-05, R11.3-06: no token for a lease that is not the item's current one."""
    story, first = started()
    story.do("work.checkpoint")
    story.do("work.start")
    call = story.call("capability.issue", lease_id=first["lease_id"])
    refused(story, call, ErrorCode.STALE_LEASE, "R11.3-05")


def test_issue_after_the_lease_expired_is_stale() -> None:
    """R11.3-09, R11.3-07: rotation only while the lease remains active."""
    story, _ = started()
    driver_of(story).at = NOW + LEASE_TTL
    refused(story, story.call("capability.issue"), ErrorCode.STALE_LEASE, "R11.3-09")


def test_issue_with_a_lease_released_at_a_checkpoint_is_a_stale_lease() -> None:
    """wire.md §8 (issue 16 §7): back in ``queued`` after a checkpoint, the released lease is
    not the current lease, so its id is ``STALE_LEASE`` before any state is looked at."""
    story = story_in(S.QUEUED)
    refused(story, story.call("capability.issue"), ErrorCode.STALE_LEASE, "R11.3-05")


def test_issue_from_blocked_is_an_illegal_transition() -> None:
    """R10.2-22: the in-state table allows ``active`` only; a blocked item's lease id (the
    one its owner fails it with) passes the lease check and meets the state check."""
    story = story_in(S.BLOCKED)
    refused(story, story.call("capability.issue"), ErrorCode.ILLEGAL_TRANSITION, "R10.2-22")


def test_issue_by_another_worker_is_forbidden() -> None:
    """wire§8: a principal that never owned the item is FORBIDDEN."""
    story, _ = started()
    call = replace(story.call("capability.issue"), actor="agent:w3")
    refused(story, call, ErrorCode.FORBIDDEN, "wire§9")


# --- check_claims: when a token stops being valid -----------------------------------------------


def test_a_token_is_refused_once_its_lease_is_released() -> None:
    """R11.3-09: a checkpoint releases the lease and takes its tokens with it."""
    story, claims = started()
    story.do("work.checkpoint")
    error = check_fails(claims, story, ErrorCode.STALE_LEASE, "R11.3-09")
    assert "released" in error.message


def test_a_token_is_refused_once_a_new_lease_replaced_its_own() -> None:
    """R11.3-05, R11.3-06: a token of lease A is refused while the item's lease is B."""
    story, claims = started()
    story.do("work.checkpoint")
    story.do("work.start")
    error = check_fails(claims, story, ErrorCode.STALE_LEASE, "R11.3-05")
    assert error.details["current_lease"] == story.lease_id != claims["lease_id"]


def test_a_token_is_refused_when_its_lease_expires_before_it() -> None:
    """R11.3-09: the lease's expiry by the authority clock decides, even if the token's exp
    were later (it never is: R11.3-08)."""
    story, claims = started()
    late = {**claims, "exp": claims["exp"] + 3600}
    check_fails(late, story, ErrorCode.STALE_LEASE, "R11.3-09", now=NOW + LEASE_TTL)
    check_fails(claims, story, ErrorCode.STALE_LEASE, "R11.3-08", now=NOW + LEASE_TTL)


@pytest.mark.parametrize("closing", ["lease.revoke", "work.reassign", "work.cancel"])
def test_a_token_is_refused_once_its_lease_is_revoked(closing: str) -> None:
    """R11.3-09, R11.3-10: session replacement, reassignment and cancellation revoke the lease
    and its tokens."""
    story, claims = started()
    driver = driver_of(story)
    if closing == "work.reassign":
        driver.at = NOW + LEASE_TTL  # only a lapsed lease is reassigned (R11.5-01)
    story.do(closing)
    check_fails(claims, story, ErrorCode.STALE_LEASE, "R11.3-09", now=NOW)


def test_a_token_is_good_for_its_own_work_item_and_group_only() -> None:
    """R11.3-06: asked about another WorkItem or group, the token is refused."""
    story, claims = started()
    caps.check_claims(claims, item_of(story), NOW, group=GROUP, work_item=ITEM)
    check_fails(claims, story, ErrorCode.FORBIDDEN, "R11.3-06", work_item="wi-other")
    check_fails(claims, story, ErrorCode.FORBIDDEN, "R11.3-06", group="g-other")


def test_a_token_of_an_unknown_work_item_is_not_found() -> None:
    """wire§4: the WorkItem the token names must exist."""
    _, claims = started()
    with pytest.raises(ProtocolError) as caught:
        caps.check_claims(claims, None, NOW)
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_a_token_for_another_holder_or_epoch_is_stale_ownership() -> None:
    """R11.3-01: the token's subject and ownership epoch are the lease holder's."""
    story, claims = started()
    check_fails({**claims, "sub": "agent:w3"}, story, ErrorCode.STALE_OWNERSHIP, "R11.3-01")
    check_fails({**claims, "ownership_epoch": 2}, story, ErrorCode.STALE_OWNERSHIP, "R11.3-01")


@pytest.mark.parametrize("missing", ["lease_id", "scope", "exp", "jti"])
def test_claims_without_the_binding_are_not_a_capability_token(missing: str) -> None:
    """R11.3-06: a token without its lease binding is not one of ours."""
    story, claims = started()
    broken = {name: value for name, value in claims.items() if name != missing}
    check_fails(broken, story, ErrorCode.MALFORMED, "R11.3-06")
