"""Fuzzing the execution surfaces over HTTP: the offline binding, capability tokens,
lease and start windows, authority-only types and usage charges (wire.md §3, §8, §9).

The same rule as ``test_fuzz.py``, with its strategies and checks (``tests/api/fuzzing.py``):
every answer is a 4xx in the §8 shape with a known code and an R-ID — or an acceptance that an
independent oracle, written here from the requirements rather than from the authority's code,
says was due, checked field by field — never a 5xx. A refusal appends nothing and changes no
projection (the WorkItem's whole state and every Mission's ``used`` are compared); a charge
never leaves ``used`` above a limit (R11.5-13).

Each test builds its world once and then runs its Hypothesis examples against it, so state
accumulates as a long-lived client's would: budgets drain, leases renew, tokens rotate.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from apps.ledger.models import Event
from apps.ledger.write_path import submit_authority_command
from apps.work.models import Mission, WorkItem
from missionweave.protocol.budgets import USAGE_RECORDED, add_usage, non_zero
from missionweave.protocol.capabilities import (
    MAX_REVOKES,
    MAX_SCOPE_ENTRIES,
    MAX_TOKEN_TTL_S,
    MIN_TOKEN_TTL_S,
    SCOPE_KINDS,
)
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.offline import BINDING_FIELDS, BUFFERABLE, EXTENSION, MAX_GRACE
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.validation import BUDGET_DIMENSIONS
from missionweave.protocol.work.checks import (
    LEASE_TTL,
    MAX_LEASE_TTL_S,
    MAX_START_WINDOW_S,
    MIN_LEASE_TTL_S,
    MIN_START_WINDOW_S,
)
from missionweave.protocol.work.leases import REASSIGN, reassign_command_id

from .fuzzing import (
    CODES,
    ODD_TEXT,
    assert_error_document,
    assert_refused,
    dumps,
    envelope,
    json_values,
    odd_values,
    outcome,
    raw_bodies,
    strictly_parses,
)
from .http import JSON, bearer, error_of, get, head_sequence, json_of, post, submit
from .test_offline import binding_of, reconnect, start
from .work_http import (
    Persona,
    Wire,
    WorkWorld,
    authorized,
    basis,
    checkpoint_body,
    contract,
    far,
    offer_body,
    progress_body,
)

pytestmark = pytest.mark.django_db


def fuzz(max_examples: int) -> settings:
    """Examples per property, chosen to keep the whole file near a minute on a quiet machine;
    the "ci" profile (tests/conftest.py) still applies and derandomizes them."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


CHECK = "/capabilities:check"
WIDE = {"tools": ["search", "fetch"], "data": ["incidents", "hr"], "operations": ["read", "write"]}
#: an item contract that limits three dimensions and leaves three unlimited (wire.md §10);
#: the mission ``m-1`` limits only money (50) and tokens (1,000,000)
LIMITS = {"money": 5.0, "tokens": 200000, "side_effects": 0}
SAFE_INT = 2**53 - 1  # the largest integer with a canonical form (wire.md §1, RFC 8785)


# --- shared strategies: numbers, times and usage maps ---------------------------------------

NUMBER_ODDITIES = st.sampled_from(
    [
        0, -1, 1, 2, SAFE_INT, SAFE_INT + 1, 2**63, 10**30, 1.0, -0.0, 0.5, 1e308, 5e-324,
        1.7976931348623157e308, True, False, None, "1", "NaN", "Infinity", "-Infinity", "1e400",
        [], {}, [1], {"$numberLong": "1"},
    ]
)  # fmt: skip
TIME_ODDITIES = st.sampled_from(
    [
        "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z", "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-06-30T23:59:60Z",
        "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00z",
        "2026-01-01 00:00:00Z", "2026-01-01", "20260101T000000Z", "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00.1234567890Z", "+2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z\n",
        "٢٠٢٦-01-01T00:00:00Z", "NaN", "now", "", "0",
    ]
)  # fmt: skip
any_moment = st.datetimes(
    min_value=datetime(1, 1, 1),
    max_value=datetime(9999, 12, 31, 23, 59, 59),
    timezones=st.just(UTC),
).map(lambda moment: moment.isoformat(timespec="microseconds").replace("+00:00", "Z"))


def near(moment: str) -> st.SearchStrategy[str]:
    """A well-formed time within a few minutes (or a few days) of ``moment``."""
    base = parse_timestamp(moment)
    return st.integers(min_value=-400_000, max_value=400_000).map(
        lambda ms: format_timestamp(base + timedelta(milliseconds=ms))
    ) | st.integers(min_value=-5 * 86400, max_value=5 * 86400).map(
        lambda s: format_timestamp(base + timedelta(seconds=s))
    )


_JUNK_DIMENSIONS = st.sampled_from(["gold", "", "Tokens", "tokens ", "money\x00", "😀"])
amounts = (
    st.integers(min_value=0, max_value=10**6)
    | st.floats(min_value=0, max_value=1e6, allow_nan=False)
    | NUMBER_ODDITIES
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
)
#: deltas a worker may well send: known dimensions, amounts from nothing to past any limit
fair_usage = st.dictionaries(
    st.sampled_from(BUDGET_DIMENSIONS),
    st.integers(min_value=0, max_value=300_000)
    | st.floats(min_value=0, max_value=10)
    | st.sampled_from([0, -0.0, 5e-324, SAFE_INT, 1e21, 1e308]),
    max_size=4,
)
wild_usage = st.dictionaries(
    st.sampled_from(BUDGET_DIMENSIONS) | _JUNK_DIMENSIONS, amounts | json_values, max_size=7
)
usage_maps = fair_usage | wild_usage


def mostly(fair: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A fair value three times in four, an odd one otherwise: enough acceptances to check
    what was granted, enough oddities to look for a 5xx."""
    return st.sampled_from([False, False, False, True]).flatmap(lambda o: odd if o else fair)


_WIRE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z", re.ASCII
)


def wire_time(text: object) -> datetime | None:
    """wire.md §1 read by hand: RFC 3339 in UTC with ``Z``, ASCII digits, nothing after."""
    match = _WIRE_TIME.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    *fields, fraction = match.groups()
    try:
        year, month, day, hour, minute, second = map(int, fields)
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:  # 2026-02-30, hour 24, second 60
        return None
    return moment + timedelta(microseconds=int((fraction or "0")[:6].ljust(6, "0")))


def is_amount(value: object) -> bool:
    """A usage amount wire.md §9 allows: a finite non-negative JSON number with a canonical
    form (a bool is no number; an integer past 2**53 cannot be signed)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int) and abs(value) > SAFE_INT:
        return False
    return math.isfinite(value) and value >= 0


def is_usage(value: object) -> bool:
    return isinstance(value, dict) and all(
        name in BUDGET_DIMENSIONS and is_amount(amount) for name, amount in value.items()
    )


def whole_seconds(value: object, low: int, high: int) -> bool:
    """``lease_ttl_s``, ``start_within_s``, ``ttl_s``: absent (null) or a whole number in
    bounds (R11.3-03, R11.3-02, R11.3-07)."""
    return value is None or (type(value) is int and low <= value <= high)


seconds_values = (
    st.none()
    | st.integers(min_value=1, max_value=MAX_LEASE_TTL_S)
    | st.integers(min_value=1, max_value=MAX_START_WINDOW_S)
    | json_values
    | NUMBER_ODDITIES
    | st.integers(min_value=-5, max_value=10)
    | st.integers(min_value=3590, max_value=3610)
    | st.integers(min_value=MAX_START_WINDOW_S - 5, max_value=MAX_START_WINDOW_S + 5)
    | st.sampled_from([300.0, 1e3, "300", [300], {"s": 300}, 2**64])
)


# --- what the database says before and after ------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """The log head, a WorkItem's whole projected state and every Mission's ``used``."""

    head: int
    item: dict[str, Any]
    missions: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, group: str, work_item: str) -> Snapshot:
        row = WorkItem.objects.get(group_id=group, work_item_id=work_item)
        missions = {m.mission_id: dict(m.used) for m in Mission.objects.filter(group_id=group)}
        return cls(head_sequence(group), row.data, missions)

    @property
    def used(self) -> dict[str, Any]:
        return self.item["budgets"]["used"]


def ceiling(limit: Any) -> Any:
    """A dimension's effective limit: unlimited (absent) still stops at 2**53-1, the most a
    JSON number counts exactly (wire.md §1, R11.5-13)."""
    return SAFE_INT if limit is None or limit > SAFE_INT else limit


def assert_within_limits(group: str, work_item: str) -> None:
    """R11.5-13: no charge ever leaves ``used`` above a limit, or not a finite number."""
    item = WorkItem.objects.get(group_id=group, work_item_id=work_item).to_state()
    holders = [(item.limits, item.used)]
    holders += [(m.limits, m.used) for m in Mission.objects.filter(group_id=group)]
    for limits, used in holders:
        for dimension, amount in used.items():
            assert is_amount(amount), (dimension, amount)
            assert amount <= ceiling(limits.get(dimension)), (dimension, amount, limits)


def would_overflow(
    before: Snapshot, limits: tuple[dict[str, Any], dict[str, Any]], usage: dict[str, Any]
) -> bool:
    """R11.5-13 by hand: a non-zero amount taking the item or its mission ``m-1`` (which has
    no parent) past a limit; ``limits`` are the item's and the mission's."""
    holders = [(limits[0], before.used), (limits[1], before.missions["m-1"])]
    return any(
        amount and not used.get(dimension, 0) + amount <= ceiling(holder.get(dimension))
        for holder, used in holders
        for dimension, amount in usage.items()
    )


@dataclass(frozen=True)
class Judged:
    """One command sent: the answer, the state around it, and whether the strict parser of
    wire.md §1 could even read the bytes (when not, only the §8 refusal is checked)."""

    response: Any
    before: Snapshot
    after: Snapshot
    parsed: bool

    @property
    def error(self) -> dict[str, Any]:
        return json.loads(self.response.content)["error"]

    def refused_with(self, status: int, code: str, requirement: str | None = None) -> None:
        error = self.error
        assert (self.response.status_code, error["code"]) == (status, code), error
        assert requirement is None or error["requirement"] == requirement, error

    def accepted(self, types: list[str]) -> dict[str, Any]:
        """A 201 whose events are exactly ``types``, appended at the head in order."""
        response, before = self.response, self.before
        assert response.status_code == 201, (response.status_code, response.content[:400])
        answer = json.loads(response.content)
        assert [e["type"] for e in answer["events"]] == types, answer
        sequences = [e["sequence"] for e in answer["events"]]
        assert sequences == list(range(before.head + 1, before.head + 1 + len(types)))
        assert self.after.head == before.head + len(types)
        return answer


def judged(
    wire: Wire, persona: Persona, document: Any, work_item: str, ascii_only: bool = True
) -> Judged:
    """Send ``document``: a refusal must be §8-shaped and leave everything as it was, and no
    answer may leave a ``used`` above its limit."""
    raw = dumps(document, ascii_only)
    before = Snapshot.of(wire.group, work_item)
    response = submit(wire.api, wire.group, raw, persona.token)
    after = Snapshot.of(wire.group, work_item)
    event(outcome(response.status_code, response.content))
    if response.status_code != 201:
        assert_refused(response)
        assert after == before, "a refused command appended events or changed a projection"
    assert_within_limits(wire.group, work_item)
    return Judged(response, before, after, strictly_parses(raw))


def recorded_at(group: str, sequence: int) -> datetime:
    """The authority clock when an event was appended."""
    return Event.objects.get(group_id=group, sequence=sequence).recorded_at


# --- 1. the offline binding (R11.5-07..R11.5-13) --------------------------------------------


@dataclass(frozen=True)
class Buffered:
    """What a reconnected worker holds: its binding, recorded under the lease before the new
    session revoked it (R11.3-10), and the window the authority will judge it against."""

    work_item: str
    lease_id: str
    binding: dict[str, Any]
    started_at: datetime
    closed_at: datetime
    expires_at: datetime


def buffered_world(wire: Wire, ww: WorkWorld, work_item: str) -> Buffered:
    lease_id = start(wire, ww, work_item, contract=contract(budgets=LIMITS))
    binding = binding_of(wire, ww.w2, work_item, {})
    reconnect(ww.w2)
    item = WorkItem.objects.get(group_id=wire.group, work_item_id=work_item).to_state()
    closed = item.lease_named(lease_id)
    assert closed is not None
    assert closed.closed_at is not None
    return Buffered(
        work_item,
        lease_id,
        binding,
        parse_timestamp(closed.started_at),
        parse_timestamp(closed.closed_at),
        parse_timestamp(closed.expires_at),
    )


def buffered_body(type_: str, buffered: Buffered) -> dict[str, Any]:
    if type_ == "work.progress":
        return progress_body(buffered.work_item, buffered.lease_id)
    if type_ == "work.checkpoint":
        return checkpoint_body(buffered.work_item, buffered.lease_id)
    return {"work_item": buffered.work_item, "text": "Written while offline"}


def binding_values(buffered: Buffered, name: str) -> st.SearchStrategy[Any]:
    """Odd values for one binding field, and near-misses of the field's real value."""
    original = buffered.binding[name]
    common = odd_values | ODD_TEXT | NUMBER_ODDITIES | st.text(min_size=129, max_size=3000)
    if name in ("disconnected_at", "buffered_at", "grace_deadline", "lease_expires_at"):
        span = buffered.closed_at - buffered.started_at
        inside = st.floats(min_value=0, max_value=1).map(
            lambda share: format_timestamp(buffered.started_at + share * span)
        )
        edges = st.sampled_from([buffered.started_at, buffered.closed_at, buffered.expires_at])
        around = st.builds(
            lambda edge, ms: format_timestamp(edge + timedelta(milliseconds=ms)),
            edges,
            st.integers(min_value=-3000, max_value=3000),
        )
        return inside | around | near(original) | TIME_ODDITIES | any_moment | common
    if name in ("session_epoch", "ownership_epoch"):
        return st.integers(min_value=original - 3, max_value=original + 3) | common
    if name == "usage":
        return usage_maps | common
    if name == "agent":
        principals = ["agent:w3", "agent:w2 ", "AGENT:w2", "user:w2", "agent:w2\n", "agent:"]
        return st.sampled_from(principals) | common
    near_ids = [original + "x", original.upper(), original + "\n", " " + original, "wi-other"]
    return st.sampled_from(near_ids) | common


#: every field of the binding, its times twice as often: the window is where the rules are
_FIELDS_TO_SET = (*BINDING_FIELDS, "disconnected_at", "buffered_at", "grace_deadline")
_BINDING_MUTATIONS = st.sampled_from(
    ["set"] * 4 + ["usage"] * 3 + ["none"] * 2 + ["drop", "extra", "whole", "other_urn"]
)


def mutate_binding(data: st.DataObject, buffered: Buffered) -> dict[str, Any]:
    """The extensions object with one to three changes to the binding (or to itself)."""
    extensions: dict[str, Any] = {EXTENSION: dict(buffered.binding)}
    for _ in range(data.draw(st.integers(1, 2), label="changes")):
        mutation = data.draw(_BINDING_MUTATIONS, label="mutation")
        value = extensions.get(EXTENSION)
        if mutation == "whole":
            extensions[EXTENSION] = data.draw(odd_values | ODD_TEXT, label="binding")
        elif mutation == "other_urn":
            urn = data.draw(st.sampled_from(["urn:example:x", EXTENSION + ":v2", ""]))
            extensions[urn] = data.draw(json_values, label="other")
        elif not isinstance(value, dict):
            continue
        elif mutation == "set":
            name = data.draw(st.sampled_from(_FIELDS_TO_SET), label="field")
            value[name] = data.draw(binding_values(buffered, name), label="value")
        elif mutation == "drop":
            value.pop(data.draw(st.sampled_from(BINDING_FIELDS), label="field"), None)
        elif mutation == "extra":
            key = data.draw(st.text(max_size=12) | ODD_TEXT, label="key")
            value[key] = data.draw(json_values, label="value")
        elif mutation == "usage":
            value["usage"] = data.draw(usage_maps, label="usage")
    return extensions


def binding_was_valid(buffered: Buffered, extensions: dict[str, Any]) -> bool:
    """The oracle of R11.5-07..R11.5-10, written from the requirements: one supported
    extension holding exactly the binding's fields, bound to this signer, group, item, lease
    and epochs, with a buffering time inside the historical window (lease start ≤
    disconnection ≤ buffering ≤ min(grace deadline, lease closure)), a grace deadline at most
    ``MAX_GRACE`` past a lease expiry no later than the real one, and a valid usage delta."""
    if set(extensions) != {EXTENSION} or not isinstance(extensions[EXTENSION], dict):
        return False
    value, original = extensions[EXTENSION], buffered.binding
    if set(value) != set(BINDING_FIELDS):
        return False
    for name in ("agent", "group", "work_item", "lease_id", "session_epoch", "ownership_epoch"):
        if type(value[name]) is not type(original[name]) or value[name] != original[name]:
            return False
    times = [
        wire_time(value[name])
        for name in ("disconnected_at", "buffered_at", "grace_deadline", "lease_expires_at")
    ]
    if any(moment is None for moment in times):
        return False
    disconnected, buffered_at, grace, expires = (m for m in times if m is not None)
    if expires > buffered.expires_at or grace > expires + MAX_GRACE:
        return False
    if not buffered.started_at <= disconnected <= buffered_at <= min(grace, buffered.closed_at):
        return False
    return is_usage(value["usage"])


def test_buffered_commands_with_mutated_bindings_are_refused_or_reconciled_soundly(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-07..R11.5-13: a buffered progress, checkpoint or message whose binding has a
    field changed, dropped or retyped (huge numbers, NaN-like strings, years 0001 and 9999,
    wrong formats, nested junk, long strings), random usage maps, the extension value not an
    object, extra keys or another URN beside it: a §8 refusal that appends and charges
    nothing, BUDGET_EXCEEDED exactly when the delta overflows (R11.5-13), or an acceptance
    that was due — the usage event first when the delta is non-zero, then the command's own
    event (R11.5-12) — with ``used`` grown by exactly the delta."""
    buffered = buffered_world(wire, ww, "wi-fz")
    item = WorkItem.objects.get(group_id=wire.group, work_item_id="wi-fz").to_state()
    limits = (item.limits, Mission.objects.get(group_id=wire.group, mission_id="m-1").limits)

    @fuzz(300)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        type_ = data.draw(st.sampled_from(sorted(BUFFERABLE)), label="type")
        extensions = mutate_binding(data, buffered)
        document = envelope(
            ww.w2, wire.group, type_, buffered_body(type_, buffered), extensions=extensions
        )
        sent = judged(wire, ww.w2, document, "wi-fz", data.draw(st.booleans(), label="ascii"))
        if not sent.parsed:
            return
        if not binding_was_valid(buffered, extensions):
            assert sent.response.status_code != 201, f"accepted an invalid binding: {extensions}"
            return
        usage = non_zero(extensions[EXTENSION]["usage"])
        if would_overflow(sent.before, limits, usage):
            sent.refused_with(409, "BUDGET_EXCEEDED", "R11.5-13")
            return
        answer = sent.accepted([USAGE_RECORDED] * bool(usage) + [BUFFERABLE[type_]])
        assert answer["result"]["reconciled"]["usage"] == usage
        assert sent.after.used == add_usage(sent.before.used, usage)
        assert sent.after.missions["m-1"] == add_usage(sent.before.missions["m-1"], usage)

    examples()


# --- 2. capability tokens (R11.3-06..R11.3-08, R11.5-05) -------------------------------------


def started_item(wire: Wire, ww: WorkWorld, work_item: str, **extra: Any) -> dict[str, Any]:
    """``work_item`` owned and started by w2 with an hour-long lease; its projection."""
    lease_id = start(wire, ww, work_item, ttl=MAX_LEASE_TTL_S, **extra)
    item = wire.item(work_item)
    assert item["lease"]["lease_id"] == lease_id
    return item


def is_wire_id(value: object) -> bool:
    """wire.md §1: 1..128 ASCII characters of ``[A-Za-z0-9._:-]``, nothing else."""
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 128
        and all(c.isascii() and (c.isalnum() or c in "._:-") for c in value)
    )


def scope_shape_ok(value: object) -> bool:
    """R11.3-07: all three kinds, each a list of at most 256 non-empty names."""
    return (
        isinstance(value, dict)
        and set(value) == set(SCOPE_KINDS)
        and all(
            isinstance(value[kind], list)
            and len(value[kind]) <= MAX_SCOPE_ENTRIES
            and all(isinstance(n, str) and n and len(n) <= 200 for n in value[kind])
            for kind in SCOPE_KINDS
        )
    )


def issue_body(data: st.DataObject, work_item: str, lease_id: str) -> dict[str, Any]:
    """A ``capability.issue`` body with random ``scope``, ``revoke`` and ``ttl_s``."""
    body: dict[str, Any] = {"work_item": work_item, "lease_id": lease_id}
    if data.draw(st.booleans(), label="has scope"):
        names = {
            kind: mostly(st.lists(st.sampled_from(WIDE[kind])), st.lists(st.just("shell")))
            for kind in WIDE
        }
        odd_names = st.lists(st.sampled_from(["", "x" * 201, "search"]) | json_values, max_size=3)
        odd_kinds = st.dictionaries(st.sampled_from([*SCOPE_KINDS, "tool"]), odd_names)
        body["scope"] = data.draw(
            mostly(st.fixed_dictionaries(names), odd_kinds | odd_values), label="scope"
        )
    if data.draw(st.booleans(), label="has revoke"):
        ids = st.lists(st.sampled_from(["cap_x", "cap-1", "cap_x", "c" * 128]), max_size=4)
        odd_ids = st.lists(st.sampled_from(["", "x" * 129, "a b", "c\n", "ça"]), min_size=1)
        many = st.lists(st.just("cap_y"), min_size=MAX_REVOKES - 1, max_size=MAX_REVOKES + 2)
        body["revoke"] = data.draw(mostly(ids, odd_ids | many | odd_values), label="revoke")
    if data.draw(st.booleans(), label="has ttl"):
        fair_ttl = st.integers(min_value=MIN_TOKEN_TTL_S, max_value=MAX_TOKEN_TTL_S)
        body["ttl_s"] = data.draw(mostly(fair_ttl, seconds_values), label="ttl_s")
    if data.draw(st.sampled_from([False] * 9 + [True]), label="stray"):
        body[data.draw(st.text(max_size=8) | ODD_TEXT)] = data.draw(json_values)
    return body


def issue_well_formed(body: dict[str, Any]) -> bool:
    revoke = body.get("revoke", [])
    return (
        set(body) <= {"work_item", "lease_id", "scope", "revoke", "ttl_s"}
        and ("scope" not in body or scope_shape_ok(body["scope"]))
        and isinstance(revoke, list)
        and len(revoke) <= MAX_REVOKES
        and all(is_wire_id(token_id) for token_id in revoke)
        and whole_seconds(body.get("ttl_s"), MIN_TOKEN_TTL_S, MAX_TOKEN_TTL_S)
    )


def test_capability_issue_bodies_are_refused_or_issue_a_token_inside_the_contract(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-07: random ``scope``, ``revoke`` and ``ttl_s``: 400 MALFORMED for a bad shape,
    403 FORBIDDEN for a scope wider than the contract, else one token of exactly the asked
    scope (the contract's when none is asked) that expires no later than the lease
    (R11.3-08), names the authority as issuer and records the revoked ids on the lease."""
    lease = started_item(wire, ww, "wi-cap", contract=contract(allowed=WIDE))["lease"]
    issuer = json_of(get(api, "/authority"), 200)["authority_id"]

    @fuzz(250)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        body = issue_body(data, "wi-cap", lease["lease_id"])
        sent = judged(wire, ww.w2, envelope(ww.w2, wire.group, "capability.issue", body), "wi-cap")
        if not sent.parsed:
            return
        if not issue_well_formed(body):
            sent.refused_with(400, "MALFORMED")
            return
        scope = body.get("scope", WIDE)
        if any(name not in WIDE[kind] for kind in SCOPE_KINDS for name in scope[kind]):
            sent.refused_with(403, "FORBIDDEN", "R11.3-07")
            return
        answer = sent.accepted(["capability.issued"])
        [token] = answer["result"]["capability_tokens"]
        assert token["scope"] == {kind: list(dict.fromkeys(scope[kind])) for kind in SCOPE_KINDS}
        assert parse_timestamp(token["expires_at"]) <= parse_timestamp(lease["expires_at"])
        claims = jwt.decode(token["token"], options={"verify_signature": False})
        assert (claims["iss"], claims["lease_id"]) == (issuer, lease["lease_id"])
        assert set(body.get("revoke", [])) <= set(sent.after.item["lease"]["revoked_tokens"])

    examples()


_WANTS = {"tool": "tools", "data": "data", "operation": "operations"}


def check_body_well_formed(body: Any) -> bool:
    """The shape of ``POST /capabilities:check`` (wire§4): a non-empty token of at most 8192
    characters, ids for ``work_item``/``group``, non-empty names for what is wanted (absent,
    never null: issue 16 §6)."""
    if not isinstance(body, dict) or "token" not in body:
        return False
    if not set(body) <= {"token", "work_item", "group", *_WANTS}:
        return False
    token = body["token"]
    if not isinstance(token, str) or not token or len(token) > 8192:
        return False
    if any(name in body and not is_wire_id(body[name]) for name in ("work_item", "group")):
        return False
    return all(
        n not in body or (isinstance(body[n], str) and body[n] and len(body[n]) <= 200)
        for n in _WANTS
    )


def asked(api: APIClient, persona: Persona, raw: bytes) -> dict[str, Any] | None:
    """``POST /capabilities:check`` with ``raw``: 200 with ``valid`` true or false for a
    well-formed body (the answer is returned), else a §8 refusal (``None``)."""
    response = api.post(f"/api/v1{CHECK}", data=raw, content_type=JSON, **bearer(persona.token))
    event(outcome(response.status_code, response.content))
    if not strictly_parses(raw) or not check_body_well_formed(json.loads(raw)):
        assert_refused(response)
        return None
    assert response.status_code == 200, (response.status_code, response.content[:400], raw)
    answer = json.loads(response.content)
    assert isinstance(answer["valid"], bool)
    if answer["valid"]:
        assert set(answer) == {"valid", "claims"}
    else:
        assert set(answer) == {"valid", "code", "requirement", "reason"}
        assert answer["code"] in CODES
        assert isinstance(answer["requirement"], str)
        assert answer["requirement"]
    return answer


_CHECK_KEYS_LIST = ["token", "work_item", "group", *_WANTS]
_CHECK_KEYS = st.sampled_from(_CHECK_KEYS_LIST)


def test_random_check_bodies_are_200_or_malformed(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§4, R11.5-05: random bytes, random JSON, random strings as tokens: a well-formed
    body always answers 200 (``valid`` false, since none of them is the authority's token),
    any other body a §8 refusal; never a 5xx."""
    started_item(wire, ww, "wi-chk", contract=contract(allowed=WIDE))

    @fuzz(250)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        shape = data.draw(st.sampled_from(["raw", "object", "token", "token"]), label="shape")
        if shape == "raw":
            raw = data.draw(raw_bodies, label="raw")
        else:
            body = data.draw(st.dictionaries(_CHECK_KEYS | ODD_TEXT, json_values, max_size=5))
            if shape == "token":  # a string as the token, and mostly fair fields beside it
                texts = st.text(min_size=1, max_size=300) | ODD_TEXT | st.just("x" * 8193)
                fair = st.sampled_from(["wi-chk", "g-research", "search", "read", "incidents"])
                optional = dict.fromkeys(_CHECK_KEYS_LIST[1:], mostly(fair, json_values))
                body = data.draw(
                    st.fixed_dictionaries({"token": texts}, optional=optional), label="body"
                )
            raw = dumps(body, data.draw(st.booleans(), label="ascii"))
        answer = asked(api, ww.olga, raw)
        assert answer is None or answer["valid"] is False, answer

    examples()


def tampered(data: st.DataObject, token: str) -> str:
    """``token`` with one to three characters replaced, cut short, lengthened or reordered."""
    kind = data.draw(st.sampled_from(["flip", "flip", "cut", "append", "swap_parts"]))
    if kind == "cut":
        return token[: data.draw(st.integers(1, len(token) - 1))]
    if kind == "append":
        return token + data.draw(st.text(min_size=1, max_size=8) | st.just("."))
    if kind == "swap_parts":
        return ".".join(data.draw(st.permutations(token.split("."))))
    chars = list(token)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(chars) - 1), label="at")
        chars[at] = data.draw(st.sampled_from("AB-_z9=.+/ é"), label="char")
    return "".join(chars)


def test_tampered_tokens_and_random_wants_are_judged_never_a_5xx(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.3-06, R11.5-05: flipped bytes, cut or reordered parts of a real token, or the real
    token with random ``tool``/``data``/``operation``: always 200; ``valid`` true only for the
    unchanged claims with every want inside the scope, FORBIDDEN (R11.5-05) for the real token
    asked for something outside it."""
    lease = started_item(wire, ww, "wi-tok", contract=contract(allowed=WIDE))["lease"]
    renewed = wire.ok(ww.w2, "lease.renew", {"work_item": "wi-tok", "lease_id": lease["lease_id"]})
    [real] = renewed["result"]["capability_tokens"]
    claims = jwt.decode(real["token"], options={"verify_signature": False})
    names = st.sampled_from([n for kind in WIDE.values() for n in kind]) | st.text(max_size=8)

    @fuzz(200)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        token = tampered(data, real["token"]) if data.draw(st.booleans()) else real["token"]
        body: dict[str, Any] = {"token": token}
        for field in _WANTS:
            if data.draw(st.booleans(), label=f"want {field}"):
                body[field] = data.draw(mostly(names, ODD_TEXT | json_values), label=field)
        answer = asked(api, ww.rex, dumps(body, True))
        if answer is None:
            return
        inside = all(body[field] in WIDE[kind] for field, kind in _WANTS.items() if field in body)
        if answer["valid"]:
            assert answer["claims"] == claims
            assert inside, body
        elif token == real["token"]:
            assert not inside, answer
            assert (answer["code"], answer["requirement"]) == ("FORBIDDEN", "R11.5-05")

    examples()


# --- 3. lease_ttl_s (work.start, lease.renew) and start_within_s (work.offer) ---------------


@dataclass
class Targets:
    """The items the seconds fuzz acts on, replaced when an acceptance moves one along."""

    wire: Wire
    ww: WorkWorld
    made: int = 0
    queued: str = ""
    active: str = ""
    lease_id: str = ""
    offerable: str = ""

    def name(self, prefix: str) -> str:
        self.made += 1
        return f"{prefix}{self.made}"

    def fresh_queued(self) -> None:
        """An item started and checkpointed: ``queued``, owned by w2, startable again."""
        self.queued = self.name("wi-q")
        lease = started_item(self.wire, self.ww, self.queued)["lease"]
        self.wire.ok(self.ww.w2, "work.checkpoint", checkpoint_body(self.queued, lease["lease_id"]))

    def fresh_active(self) -> None:
        self.active = self.name("wi-a")
        self.lease_id = started_item(self.wire, self.ww, self.active)["lease"]["lease_id"]

    def fresh_offerable(self) -> None:
        self.offerable = self.name("wi-o")
        authorized(self.wire, self.ww, self.offerable)


def seconds_command(
    targets: Targets, which: str, value: Any
) -> tuple[Persona, str, dict[str, Any], tuple[int, int], str]:
    """(sender, item, body, bounds, event type) of ``which`` carrying ``value``."""
    ww = targets.ww
    if which == "work.start":
        epoch = targets.wire.item(targets.queued)["ownership_epoch"]
        body = {"work_item": targets.queued, "ownership_epoch": epoch, "lease_ttl_s": value}
        return ww.w2, targets.queued, body, (MIN_LEASE_TTL_S, MAX_LEASE_TTL_S), "work.started"
    if which == "lease.renew":
        body = {"work_item": targets.active, "lease_id": targets.lease_id, "lease_ttl_s": value}
        return ww.w2, targets.active, body, (MIN_LEASE_TTL_S, MAX_LEASE_TTL_S), "lease.renewed"
    item = targets.offerable
    body = offer_body(item, [(f"{item}-o", ww.w2, far())], start_within_s=value)
    return ww.w1, item, body, (MIN_START_WINDOW_S, MAX_START_WINDOW_S), "work.offered"


def test_lease_and_start_window_seconds_are_validated_exactly(wire: Wire, ww: WorkWorld) -> None:
    """R11.3-03, R11.3-02: ``lease_ttl_s`` (1..3600) on work.start and lease.renew and
    ``start_within_s`` (1..604800) on work.offer set to random JSON: a whole number in bounds
    (or null, the default) is accepted with a lease or start window of exactly that length;
    anything else is 400 MALFORMED with nothing appended."""
    targets = Targets(wire, ww)
    targets.fresh_queued()
    targets.fresh_active()
    targets.fresh_offerable()

    @fuzz(250)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        value = data.draw(seconds_values, label="value")
        which = data.draw(st.sampled_from(["work.start", "lease.renew", "work.offer"]))
        persona, item, body, (low, high), type_ = seconds_command(targets, which, value)
        sent = judged(wire, persona, envelope(persona, wire.group, which, body), item)
        if not sent.parsed:
            return
        if not whole_seconds(value, low, high):
            sent.refused_with(400, "MALFORMED")
            return
        answer = sent.accepted([type_])
        if which == "work.offer":
            assert sent.after.item["start_window_s"] == value
            targets.fresh_offerable()
            return
        seconds = LEASE_TTL.total_seconds() if value is None else value
        lease = answer["result"]["lease"]
        granted = parse_timestamp(lease["expires_at"]) - recorded_at(wire.group, sent.after.head)
        assert abs(granted.total_seconds() - seconds) < 1e-3, (granted, seconds)
        if which == "work.start":  # release it, so that the next start finds it queued
            wire.ok(ww.w2, "work.checkpoint", checkpoint_body(item, lease["lease_id"]))
        elif seconds < 60:  # renew it for an hour at once, or carry on with another item
            renew = {"work_item": item, "lease_id": targets.lease_id}
            again = submit(
                wire.api, wire.group, ww.w2.command(wire.group, "lease.renew", renew), ww.w2.token
            )
            if again.status_code != 201:
                targets.fresh_active()

    examples()


# --- 4. authority-only types from clients (wire§9) ------------------------------------------

AUTHORITY_ONLY = sorted(t for t, spec in COMMANDS.items() if spec.authority_only)


def test_authority_only_types_from_clients_are_unknown_commands(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§9: ``work.reassign``, ``lease.revoke``, ``link.child_usage`` and the other
    ``link.*`` commands are the authority's own; from any client, alone or in a batch, with a
    plausible or a random body, they are 400 UNKNOWN_COMMAND and append nothing."""
    assert {"work.reassign", "lease.revoke", "link.child_usage"} <= set(AUTHORITY_ONLY)
    lease_id = started_item(wire, ww, "wi-auth")["lease"]["lease_id"]
    plausible = {
        "work_item": "wi-auth",
        "ownership_epoch": 1,
        "reason": "lease_expired",
        "lease_id": lease_id,
        "session_epoch": ww.w2.session_epoch,
    }
    personas = [ww.w1, ww.w2, ww.w3, ww.olga, ww.cora, ww.rex, ww.alice]

    @fuzz(150)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        type_ = data.draw(st.sampled_from(AUTHORITY_ONLY), label="type")
        persona = data.draw(st.sampled_from(personas), label="persona")
        body = data.draw(st.just(plausible) | st.dictionaries(st.text(max_size=8), json_values))
        document = envelope(persona, wire.group, type_, body)
        if not data.draw(st.booleans(), label="in a batch"):
            sent = judged(wire, persona, document, "wi-auth")
            if sent.parsed:
                sent.refused_with(400, "UNKNOWN_COMMAND", "wire§9")
            return
        before = head_sequence(wire.group)
        raw = dumps({"commands": [document]}, True)
        response = post(api, f"/groups/{wire.group}/commands:batch", raw, persona.token)
        assert head_sequence(wire.group) == before
        if not strictly_parses(raw):
            assert_refused(response)
            return
        assert response.status_code == 200, response.content[:300]
        [result] = json.loads(response.content)["results"]
        assert_error_document(result["body"], result["status"])
        error = result["body"]["error"]
        assert (result["status"], error["code"], error["requirement"]) == (
            400,
            "UNKNOWN_COMMAND",
            "wire§9",
        )

    examples()


# --- 5. work.usage near the limits (R10.1-01(g), R11.5-13) ----------------------------------


def test_usage_near_the_limits_is_charged_exactly_or_refused_whole(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.1-01(g), R11.5-12, R11.5-13: random usage maps (huge, tiny, negative, bool, nested,
    exactly the remaining budget, a hair under or over it, on limited and unlimited
    dimensions): 400 MALFORMED for a bad map, 409 BUDGET_EXCEEDED with nothing charged exactly
    when the item's or the mission's limit would be passed (an unlimited dimension still stops
    at 2**53-1), else charged exactly — never a 5xx, never a ``used`` above a limit."""
    lease_id = started_item(wire, ww, "wi-use", contract=contract(budgets=LIMITS))["lease"][
        "lease_id"
    ]
    item = WorkItem.objects.get(group_id=wire.group, work_item_id="wi-use").to_state()
    limits = (item.limits, Mission.objects.get(group_id=wire.group, mission_id="m-1").limits)

    def near_limit(data: st.DataObject, before: Snapshot, dimension: str) -> Any:
        """What is left under the tighter of the two limits, or a hair either side of it."""
        used = (before.used, before.missions["m-1"])
        left = min(
            ceiling(holder.get(dimension)) - spent.get(dimension, 0)
            for holder, spent in zip(limits, used, strict=True)
        )
        candidates = [left, left / 2, left + 1, math.nextafter(left, math.inf)]
        candidates += [math.nextafter(left, 0), 1e308, 1e21]
        return data.draw(st.sampled_from([c for c in candidates if c >= 0]), label="near")

    @fuzz(300)
    @given(data=st.data())
    def examples(data: st.DataObject) -> None:
        before = Snapshot.of(wire.group, "wi-use")
        usage = data.draw(usage_maps, label="usage")
        for dimension in data.draw(st.lists(st.sampled_from(BUDGET_DIMENSIONS), max_size=3)):
            usage[dimension] = near_limit(data, before, dimension)
        body = {"work_item": "wi-use", "lease_id": lease_id, "usage": usage}
        sent = judged(wire, ww.w2, envelope(ww.w2, wire.group, "work.usage", body), "wi-use")
        if not sent.parsed:
            return
        if not is_usage(usage):
            sent.refused_with(400, "MALFORMED")
            return
        if would_overflow(sent.before, limits, usage):
            sent.refused_with(409, "BUDGET_EXCEEDED", "R11.5-13")
            return
        sent.accepted(["work.usage_recorded"])
        assert sent.after.used == add_usage(sent.before.used, usage)
        assert sent.after.missions["m-1"] == add_usage(sent.before.missions["m-1"], usage)

    examples()


# --- found by fuzzing ----------------------------------------------------------------------


def test_a_huge_double_in_a_selection_basis_survives_the_projection_into_a_reoffer(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-01 with wire.md §1: ``1e21`` passes the strict parser, but PostgreSQL's jsonb
    writes it back as the integer 1000000000000000000000, which RFC 8785 refuses; the re-offer
    of ``work.reassign`` copies the selection basis from the projection, so before the loader
    restored such integers to doubles the reassignment could never be hashed and the item
    stayed stuck with its expired lease."""
    authorized(wire, ww, "wi-big")
    offers = [("o1", ww.w2, far()), ("o2", ww.w3, far())]
    expensive = basis(expected_cost={"money": 1e21, "tokens": 1.5e300})
    wire.ok(
        ww.w1, "work.offer", offer_body("wi-big", offers, "sequential", selection_basis=expensive)
    )
    revision = wire.item("wi-big")["revision"]
    accept = {"work_item": "wi-big", "offer": "o1", "contract_revision": revision}
    epoch = wire.ok(ww.w2, "work.accept_offer", accept)["result"]["ownership_epoch"]
    start_body = {"work_item": "wi-big", "ownership_epoch": epoch, "lease_ttl_s": 1}
    wire.ok(ww.w2, "work.start", start_body)
    time.sleep(1.2)
    outcome_ = submit_authority_command(
        group_id=wire.group,
        type_=REASSIGN,
        body={"work_item": "wi-big", "ownership_epoch": epoch, "reason": "lease_expired"},
        command_id=reassign_command_id("wi-big", epoch),
    )
    assert outcome_.status == 201
    reoffer = wire.events(outcome_.events[-1]["sequence"] - 1)[-1]
    assert reoffer["type"] == "work.offered"
    assert reoffer["payload"]["selection_basis"]["expected_cost"] == {
        "money": 1e21,
        "tokens": 1.5e300,
    }


def test_an_unlimited_dimension_still_stops_at_the_largest_exact_count(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-13 with wire.md §1: ``compute`` is limited neither by the item nor by ``m-1``;
    two charges of 1e308 once summed to infinity, which the jsonb projection could not store
    (a 500 after the events were decided). Now 2**53-1 bounds every ``used``: up to it is
    charged, past it is BUDGET_EXCEEDED with nothing charged."""
    lease_id = started_item(wire, ww, "wi-inf", contract=contract(budgets=LIMITS))["lease"][
        "lease_id"
    ]

    def usage(amount: float) -> dict[str, Any]:
        return {"work_item": "wi-inf", "lease_id": lease_id, "usage": {"compute": amount}}

    error = wire.refused(ww.w2, "work.usage", usage(1e308), 409, "BUDGET_EXCEEDED", "R11.5-13")
    assert error["details"]["budget"] == {
        "kind": "work_item",
        "id": "wi-inf",
        "limit": SAFE_INT,
        "used": 0,
    }
    wire.ok(ww.w2, "work.usage", usage(SAFE_INT))
    wire.refused(ww.w2, "work.usage", usage(1), 409, "BUDGET_EXCEEDED", "R11.5-13")
    assert wire.item("wi-inf")["budgets"]["used"] == {"compute": SAFE_INT}
    assert wire.mission("m-1")["budgets"]["used"] == {"compute": SAFE_INT}


@pytest.mark.parametrize("want", ["tool", "data", "operation"])
def test_a_null_want_is_malformed_and_an_absent_one_asks_nothing(
    api: APIClient, wire: Wire, ww: WorkWorld, want: str
) -> None:
    """R11.5-05, issue 16 §6: a want names something or is left out. ``null`` is MALFORMED
    (the OpenAPI document says a string; it was once read as "asks nothing", and before that
    as "None is outside the scope"); leaving it out judges the token on the rest."""
    lease = started_item(wire, ww, "wi-null", contract=contract(allowed=WIDE))["lease"]
    renewed = wire.ok(ww.w2, "lease.renew", {"work_item": "wi-null", "lease_id": lease["lease_id"]})
    [token] = renewed["result"]["capability_tokens"]
    error = error_of(post(api, CHECK, {"token": token["token"], want: None}, ww.olga.token), 400,
                     "MALFORMED")  # fmt: skip
    assert error["details"]["path"] == f"$.{want}"
    answer = json_of(
        post(api, CHECK, {"token": token["token"], "operation": "read"}, ww.olga.token), 200
    )
    assert answer["valid"] is True, answer


@pytest.mark.parametrize(
    "odd",
    [
        lambda moment: moment + "\n",
        lambda moment: moment.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")),
    ],
    ids=["trailing newline", "arabic-indic digits"],
)
def test_a_time_or_id_with_a_trailing_newline_or_non_ascii_digits_is_malformed(
    wire: Wire, ww: WorkWorld, odd: Any
) -> None:
    """wire.md §1: ids are ``[A-Za-z0-9._:-]{1,128}`` and times RFC 3339 with ``Z``; the
    parsers' ``$`` let "m-2\\n" and "…Z\\n" through and ``\\d`` took "٢٠٢٦" for 2026."""
    lease_id = start(wire, ww, "wi-odd")
    bound = binding_of(wire, ww.w2, "wi-odd", {})
    bound["buffered_at"] = odd(bound["buffered_at"])
    reconnect(ww.w2)
    error = wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-odd", lease_id),
        400,
        "MALFORMED",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["path"].endswith(".buffered_at")
    body = {"mission": "m-2\n", "goal": "A goal", "budgets": {}}
    wire.refused(ww.olga, "mission.create", body, 400, "MALFORMED")
