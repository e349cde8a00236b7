"""The external operation idempotency key (R16-12, R11.4-09): one pure function, stable for the
same four inputs and different as soon as any of them differs."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from missionweave.protocol.idempotency import MAX_SAFE_INTEGER, PREFIX, external_operation_key

KEY_SHAPE = re.compile(r"^mwp-op-v1-[0-9a-f]{64}$")

ids = st.text(min_size=1, max_size=40)
epochs = st.integers(min_value=1, max_value=MAX_SAFE_INTEGER)
inputs = st.tuples(ids, ids, epochs, ids)


def test_the_key_is_the_sha256_of_the_canonical_json_of_the_four_inputs() -> None:
    """R16-12: derived from mission, WorkItem, ownership epoch and logical operation id —
    recomputed here independently (sorted keys, no whitespace: RFC 8785 for this input), so
    another implementation of the worker runtime can derive the very same key."""
    source = {
        "mission": "m-1",
        "work_item": "wi-1",
        "ownership_epoch": 1,
        "operation": "notify-customer",
    }
    canonical = json.dumps(source, sort_keys=True, separators=(",", ":")).encode()
    expected = PREFIX + hashlib.sha256(canonical).hexdigest()
    assert external_operation_key("m-1", "wi-1", 1, "notify-customer") == expected
    assert expected == (
        "mwp-op-v1-68cf8e7a35482c447584b0ba3ce9e85b2b4d0db5ba56869776ebaab67c0d53da"
    )


@given(inputs)
def test_the_same_inputs_always_give_the_same_key(values: tuple[str, str, int, str]) -> None:
    """R16-12, R11.4-09: stable — a retry, a restart or a reconnection of the same owner
    derives the same key, so the external system sees a duplicate, not a new operation."""
    first = external_operation_key(*values)
    assert external_operation_key(*values) == first
    assert KEY_SHAPE.match(first), first


@given(inputs, inputs)
def test_keys_differ_when_any_input_differs(
    one: tuple[str, str, int, str], other: tuple[str, str, int, str]
) -> None:
    """R16-12: every input is part of the key (distinct inputs, distinct keys)."""
    if one == other:
        assert external_operation_key(*one) == external_operation_key(*other)
    else:
        assert external_operation_key(*one) != external_operation_key(*other)


@given(inputs, st.integers(min_value=0, max_value=3), st.data())
def test_changing_a_single_input_changes_the_key(
    values: tuple[str, str, int, str], position: int, data: st.DataObject
) -> None:
    """R16-12, R11.5-01: a new ownership epoch (a reassignment), another WorkItem, mission or
    operation each give a new key."""
    strategy = epochs if position == 2 else ids
    replacement = data.draw(strategy.filter(lambda value: value != values[position]))
    changed = list(values)
    changed[position] = replacement
    assert external_operation_key(*changed) != external_operation_key(*values)


def test_separators_inside_the_inputs_cannot_make_two_operations_collide() -> None:
    """R16-12: canonical JSON, not concatenation — ("a:b", "c") and ("a", "b:c") differ."""
    key = external_operation_key
    assert key("m", "a:b", 1, "c") != key("m", "a", 1, "b:c")
    assert key("m/x", "w", 1, "op") != key("m", "x/w", 1, "op")


@pytest.mark.parametrize(
    ("mission", "work_item", "epoch", "operation"),
    [
        ("", "wi-1", 1, "op"),
        ("m-1", "", 1, "op"),
        ("m-1", "wi-1", 1, ""),
        ("m-1", "wi-1", 0, "op"),
        ("m-1", "wi-1", -1, "op"),
        ("m-1", "wi-1", True, "op"),
        ("m-1", "wi-1", 1.0, "op"),
        ("m-1", "wi-1", MAX_SAFE_INTEGER + 1, "op"),
        (None, "wi-1", 1, "op"),
        ("m-1", "wi-1", 1, 7),
    ],
)
def test_unusable_inputs_are_refused(
    mission: object, work_item: object, epoch: object, operation: object
) -> None:
    """R16-12: an ownership epoch starts at 1 (R10.2-04) and the ids are non-empty strings;
    anything else could silently alias another operation's key."""
    with pytest.raises(ValueError, match="is a"):
        external_operation_key(mission, work_item, epoch, operation)  # type: ignore[arg-type]
