"""Timeout and cost policy in the Work Contract (R10.1-01(h); issue 35 §8), both optional.

``timeout.attempt_s``: the most wall-clock seconds one attempt may run (the reference Worker
blocks the item at its next checkpoint past it, ``missionweave/worker/policies.py``).
``cost_policy.retry_below``: an automatic retry starts only while every budgeted dimension's
use is below that share of its limit (the authority's ``retry_plan``).
"""

from __future__ import annotations

from typing import Any

import pytest

from missionweave.protocol.contracts import is_substantial_change, validate_contract
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import example_contract

from .lease_stories import active, item, with_body
from .test_retries import failing, retry
from .work_scenarios import work_contract


def test_both_policies_are_optional_and_kept_as_given() -> None:
    """R10.1-01(h), additive: a contract without them is as valid as before."""
    assert "timeout" not in validate_contract(example_contract())
    contract = example_contract(timeout={"attempt_s": 600}, cost_policy={"retry_below": 0.8})
    checked = validate_contract(contract)
    assert checked["timeout"] == {"attempt_s": 600}
    assert checked["cost_policy"] == {"retry_below": 0.8}
    # a changed limit is a substantial change: the worker accepts it anew (R10.1-05)
    assert is_substantial_change(example_contract(), contract)


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("timeout", 600, "$.contract.timeout"),
        ("timeout", {}, "$.contract.timeout.attempt_s"),
        ("timeout", {"attempt_s": 0}, "$.contract.timeout.attempt_s"),
        ("timeout", {"attempt_s": "10m"}, "$.contract.timeout.attempt_s"),
        ("timeout", {"attempt_s": 60, "total_s": 9}, "$.contract.timeout.total_s"),
        ("cost_policy", {"retry_below": 0}, "$.contract.cost_policy.retry_below"),
        ("cost_policy", {"retry_below": 1.5}, "$.contract.cost_policy.retry_below"),
        ("cost_policy", {"retry_below": True}, "$.contract.cost_policy.retry_below"),
        ("cost_policy", {"currency": "EUR"}, "$.contract.cost_policy.currency"),
    ],
)
def test_a_bad_policy_is_contract_invalid_at_its_path(field: str, value: Any, path: str) -> None:
    """R10.1-01: every bad field named by its JSON path."""
    with pytest.raises(ProtocolError) as caught:
        validate_contract(example_contract(**{field: value}))
    assert caught.value.code is ErrorCode.CONTRACT_INVALID
    assert path in [error["path"] for error in caught.value.details["errors"]]


@pytest.mark.parametrize(
    ("spent_tokens", "outcome"), [(159_999, "work.retry_scheduled"), (160_000, "work.failed")]
)
def test_no_retry_starts_once_a_budget_is_used_past_the_cost_policys_share(
    spent_tokens: int, outcome: str
) -> None:
    """R10.1-01(h), R11.4-08: with ``retry_below`` 0.8, 80 % of the 200,000 tokens used ends
    the retries ("cost"), leaving the rest of the budget unspent on a doomed attempt."""
    contract = work_contract(retry=retry(), cost_policy={"retry_below": 0.8})
    story = active(contract=contract)
    assert item(story)["budgets"]["limits"]["tokens"] == 200_000
    story.run(with_body(story.call("work.usage"), usage={"tokens": spent_tokens}))
    ran = failing(story)
    assert ran.types == [outcome]
    if outcome == "work.failed":
        assert ran.events[0][1]["retries_exhausted"] == "cost"


def test_without_a_cost_policy_only_a_spent_money_budget_ends_retries() -> None:
    """R11.4-08 as before: tokens used up to the limit still leave retries to the policy."""
    story = active(contract=work_contract(retry=retry()))
    story.run(with_body(story.call("work.usage"), usage={"tokens": 199_999}))
    assert failing(story).types == ["work.retry_scheduled"]
