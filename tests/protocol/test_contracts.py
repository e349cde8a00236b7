"""The Work Contract schema ``mwp.contract/1`` (wire.md §10, R10.1-01), without a database."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.canonical import digest, sha256_digest
from missionweave.protocol.contracts import (
    CONTRACT_SCHEMA,
    MAX_REPORTED_ERRORS,
    contract_digest,
    is_substantial_change,
    validate_contract,
)
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST, example_contract

DELETE = object()


def _edit(contract: dict[str, Any], location: tuple[str | int, ...], value: object) -> dict:
    """``contract`` with the node at ``location`` replaced by ``value`` (or removed: DELETE)."""
    edited = copy.deepcopy(contract)
    parent: Any = edited
    for step in location[:-1]:
        parent = parent[step]
    if value is DELETE:
        del parent[location[-1]]
    else:
        parent[location[-1]] = copy.deepcopy(value)
    return edited


def _refusal(contract: object, **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        validate_contract(contract, **kwargs)
    error = caught.value
    assert error.code is ErrorCode.CONTRACT_INVALID
    assert error.status == 400
    assert error.requirement == "R10.1-01"
    return error


def _paths(error: ProtocolError) -> list[str]:
    return [item["path"] for item in error.details["errors"]]


# --- the valid example -----------------------------------------------------------------------


def test_wire_example_is_valid_and_comes_back_as_an_equal_copy() -> None:
    """R10.1-01, wire§10: the example of wire.md §10 is a valid mwp.contract/1 contract."""
    contract = example_contract()
    normalised = validate_contract(contract)
    assert normalised == contract
    assert normalised is not contract
    assert normalised["risk"] is not contract["risk"]
    assert normalised["schema"] == CONTRACT_SCHEMA == "mwp.contract/1"


def test_example_contract_overrides_top_level_fields_on_a_fresh_copy() -> None:
    """wire§10: the example helper returns independent copies that tests may mutate."""
    first = example_contract(urgency="high")
    first["acceptance_criteria"].clear()
    second = example_contract()
    assert first["urgency"] == "high"
    assert second["urgency"] == "normal"
    assert len(second["acceptance_criteria"]) == 2
    assert second["inputs"] == [{"ref": INCIDENT_REPORTS_DIGEST}]


def test_approvals_required_defaults_to_one() -> None:
    """R10.1-01(i), wire§10: approvals_required is optional and defaults to 1."""
    contract = example_contract()
    del contract["risk"]["approvals_required"]
    normalised = validate_contract(contract)
    assert normalised["risk"]["approvals_required"] == 1
    assert "approvals_required" not in contract["risk"], "the input is not modified"


def test_absent_notes_stay_absent_and_present_notes_are_kept() -> None:
    """R10.1-06: prose may supplement the fields in an optional notes string."""
    assert "notes" not in validate_contract(example_contract())
    prose = "Reports from the Lisbon office arrive late; include them if present."
    assert validate_contract(example_contract(notes=prose))["notes"] == prose
    assert validate_contract(example_contract(notes=""))["notes"] == ""


@pytest.mark.parametrize(
    ("location", "value"),
    [
        pytest.param(("inputs",), [], id="c-no-inputs"),
        pytest.param(("capabilities",), [], id="e-no-capabilities"),
        pytest.param(("budgets",), {}, id="g-every-budget-unlimited"),
        pytest.param(("budgets",), {"money": 0, "tokens": 1.5}, id="g-zero-and-fraction"),
        pytest.param(("resources", "gpu_hours"), 2.5, id="d-extra-resource"),
        pytest.param(("allowed", "tools"), [], id="d-no-tools"),
        pytest.param(("acceptance_criteria", 0, "evidence"), [], id="b-no-evidence-kind"),
        pytest.param(("outputs", 0, "schema"), "https://example.org/s.json", id="a-schema-ref"),
        pytest.param(("outputs", 0, "schema"), {"type": "object"}, id="a-inline-schema"),
        pytest.param(("dependency_policy",), "all_terminal", id="c-all-terminal"),
        pytest.param(("acceptance_criteria", 1, "method"), "agent_review", id="b-agent-review"),
        pytest.param(("deadline",), "2026-12-01T00:00:00.123456Z", id="f-fraction"),
        pytest.param(("retry", "max_backoff_s"), 30, id="h-max-equals-initial"),
        pytest.param(("risk", "approvals_required"), 2, id="i-two-approvals"),
        pytest.param(("risk", "class"), "critical", id="i-critical"),
    ],
)
def test_values_at_the_edge_of_the_schema_are_valid(
    location: tuple[str | int, ...], value: object
) -> None:
    """R10.1-01: empty optional lists, unlimited budgets and the other allowed edges pass."""
    contract = _edit(example_contract(), location, value)
    assert validate_contract(contract) == contract


# --- each field's violations, by exact path ----------------------------------------------------

VIOLATIONS = [
    # the version
    pytest.param(("schema",), "mwp.contract/2", "$.contract.schema", id="schema-v2"),
    pytest.param(("schema",), 1, "$.contract.schema", id="schema-number"),
    # R10.1-01(a): goal and outputs
    pytest.param(("goal",), "", "$.contract.goal", id="a-goal-empty"),
    pytest.param(("goal",), "   ", "$.contract.goal", id="a-goal-blank"),
    pytest.param(("goal",), "x" * 10_001, "$.contract.goal", id="a-goal-too-long"),
    pytest.param(("goal",), ["g"], "$.contract.goal", id="a-goal-list"),
    pytest.param(("outputs",), [], "$.contract.outputs", id="a-outputs-empty"),
    pytest.param(("outputs",), {"name": "s"}, "$.contract.outputs", id="a-outputs-object"),
    pytest.param(("outputs", 0), "summary", "$.contract.outputs[0]", id="a-output-string"),
    pytest.param(("outputs", 0, "name"), "", "$.contract.outputs[0].name", id="a-name"),
    pytest.param(("outputs", 0, "media_type"), 7, "$.contract.outputs[0].media_type", id="a-media"),
    pytest.param(("outputs", 0, "schema"), 3, "$.contract.outputs[0].schema", id="a-schema"),
    pytest.param(("outputs", 0, "schema"), "", "$.contract.outputs[0].schema", id="a-schema-"),
    pytest.param(
        ("outputs", 0, "schema"), {"k": {1, 2}}, "$.contract.outputs[0].schema", id="a-not-json"
    ),
    # R10.1-01(b): acceptance criteria and evidence
    pytest.param(("acceptance_criteria",), [], "$.contract.acceptance_criteria", id="b-empty"),
    pytest.param(
        ("acceptance_criteria", 1, "method"),
        "vibes",
        "$.contract.acceptance_criteria[1].method",
        id="b-method",
    ),
    pytest.param(
        ("acceptance_criteria", 0, "id"),
        "c 1",
        "$.contract.acceptance_criteria[0].id",
        id="b-id-syntax",
    ),
    pytest.param(
        ("acceptance_criteria", 0, "id"),
        "c" * 129,
        "$.contract.acceptance_criteria[0].id",
        id="b-id-too-long",
    ),
    pytest.param(
        ("acceptance_criteria", 1, "id"),
        "c1",
        "$.contract.acceptance_criteria[1].id",
        id="b-id-duplicate",
    ),
    pytest.param(
        ("acceptance_criteria", 0, "description"),
        None,
        "$.contract.acceptance_criteria[0].description",
        id="b-description",
    ),
    pytest.param(
        ("acceptance_criteria", 0, "evidence"),
        "test_result",
        "$.contract.acceptance_criteria[0].evidence",
        id="b-evidence-string",
    ),
    pytest.param(
        ("acceptance_criteria", 1, "evidence"),
        ["review", ""],
        "$.contract.acceptance_criteria[1].evidence[1]",
        id="b-evidence-entry",
    ),
    # R10.1-01(c): inputs and dependencies
    pytest.param(("inputs",), None, "$.contract.inputs", id="c-inputs-null"),
    pytest.param(("inputs", 0, "ref"), "sha256:...", "$.contract.inputs[0].ref", id="c-ref"),
    pytest.param(
        ("inputs", 0, "ref"),
        "sha256:" + "A" * 64,
        "$.contract.inputs[0].ref",
        id="c-ref-uppercase",
    ),
    pytest.param(
        ("inputs", 0, "ref"), "md5:" + "0" * 32, "$.contract.inputs[0].ref", id="c-ref-algorithm"
    ),
    pytest.param(("dependency_policy",), "any", "$.contract.dependency_policy", id="c-policy"),
    # R10.1-01(d): allowed and resources
    pytest.param(("allowed",), [], "$.contract.allowed", id="d-allowed-list"),
    pytest.param(("allowed", "tools"), "search", "$.contract.allowed.tools", id="d-tools"),
    pytest.param(("allowed", "data"), [1], "$.contract.allowed.data[0]", id="d-data-entry"),
    pytest.param(
        ("allowed", "operations"), [""], "$.contract.allowed.operations[0]", id="d-operation"
    ),
    pytest.param(("resources",), 1, "$.contract.resources", id="d-resources-number"),
    pytest.param(
        ("resources", "max_concurrency"),
        0,
        "$.contract.resources.max_concurrency",
        id="d-concurrency-zero",
    ),
    pytest.param(
        ("resources", "max_concurrency"),
        1.5,
        "$.contract.resources.max_concurrency",
        id="d-concurrency-fraction",
    ),
    pytest.param(
        ("resources", "max_concurrency"),
        True,
        "$.contract.resources.max_concurrency",
        id="d-concurrency-bool",
    ),
    pytest.param(("resources", "memory_mb"), -1, "$.contract.resources.memory_mb", id="d-negative"),
    pytest.param(("resources", "memory_mb"), "1G", "$.contract.resources.memory_mb", id="d-string"),
    # R10.1-01(e): capabilities
    pytest.param(("capabilities",), {}, "$.contract.capabilities", id="e-object"),
    pytest.param(
        ("capabilities", 0, "id"), "", "$.contract.capabilities[0].id", id="e-capability-id"
    ),
    pytest.param(
        ("capabilities", 0, "version"), 1, "$.contract.capabilities[0].version", id="e-version"
    ),
    # R10.1-01(f): deadline, urgency, business impact
    pytest.param(("deadline",), "2026-12-01", "$.contract.deadline", id="f-date-only"),
    pytest.param(("deadline",), "2026-12-01T00:00:00+00:00", "$.contract.deadline", id="f-offset"),
    pytest.param(("deadline",), "2026-13-01T00:00:00Z", "$.contract.deadline", id="f-month-13"),
    pytest.param(("deadline",), 1_764_547_200, "$.contract.deadline", id="f-epoch"),
    pytest.param(("urgency",), "asap", "$.contract.urgency", id="f-urgency"),
    pytest.param(("urgency",), "Normal", "$.contract.urgency", id="f-urgency-case"),
    pytest.param(("business_impact",), "huge", "$.contract.business_impact", id="f-impact"),
    # R10.1-01(g): budgets
    pytest.param(("budgets",), [], "$.contract.budgets", id="g-list"),
    pytest.param(("budgets", "money"), -0.01, "$.contract.budgets.money", id="g-negative"),
    pytest.param(("budgets", "money"), "5.00", "$.contract.budgets.money", id="g-string"),
    pytest.param(("budgets", "side_effects"), False, "$.contract.budgets.side_effects", id="g-b"),
    pytest.param(("budgets", "tokens"), None, "$.contract.budgets.tokens", id="g-null"),
    pytest.param(("budgets", "tokens"), 2**53, "$.contract.budgets.tokens", id="g-unsafe-int"),
    pytest.param(("budgets", "gpu"), 1, "$.contract.budgets.gpu", id="g-unknown-dimension"),
    # R10.1-01(h): retry and backoff
    pytest.param(("retry",), 3, "$.contract.retry", id="h-number"),
    pytest.param(
        ("retry", "max_attempts"), 0, "$.contract.retry.max_attempts", id="h-attempts-zero"
    ),
    pytest.param(
        ("retry", "max_attempts"), 2.5, "$.contract.retry.max_attempts", id="h-attempts-float"
    ),
    pytest.param(
        ("retry", "initial_backoff_s"),
        -1,
        "$.contract.retry.initial_backoff_s",
        id="h-initial-negative",
    ),
    pytest.param(
        ("retry", "backoff_multiplier"),
        0.5,
        "$.contract.retry.backoff_multiplier",
        id="h-multiplier-below-one",
    ),
    pytest.param(
        ("retry", "max_backoff_s"),
        29.9,
        "$.contract.retry.max_backoff_s",
        id="h-max-below-initial",
    ),
    pytest.param(
        ("retry", "max_backoff_s"), "600", "$.contract.retry.max_backoff_s", id="h-max-string"
    ),
    # R10.1-01(i): risk and pre-execution approval
    pytest.param(("risk",), "low", "$.contract.risk", id="i-string"),
    pytest.param(("risk", "class"), "none", "$.contract.risk.class", id="i-class"),
    pytest.param(
        ("risk", "requires_execution_approval"),
        0,
        "$.contract.risk.requires_execution_approval",
        id="i-approval-int",
    ),
    pytest.param(
        ("risk", "approvals_required"),
        0,
        "$.contract.risk.approvals_required",
        id="i-approvals-zero",
    ),
    pytest.param(
        ("risk", "approvals_required"),
        True,
        "$.contract.risk.approvals_required",
        id="i-approvals-bool",
    ),
    # R10.1-06: notes, when present, are a string
    pytest.param(("notes",), ["prose"], "$.contract.notes", id="notes-list"),
    pytest.param(("notes",), "x" * 100_001, "$.contract.notes", id="notes-too-long"),
]


@pytest.mark.parametrize(("location", "value", "path"), VIOLATIONS)
def test_each_violation_is_contract_invalid_naming_its_exact_path(
    location: tuple[str | int, ...], value: object, path: str
) -> None:
    """R10.1-01(a)-(i), wire§8: a bad field is CONTRACT_INVALID and details name its path."""
    error = _refusal(_edit(example_contract(), location, value))
    assert _paths(error) == [path]
    assert error.details["errors"][0]["message"]
    assert path in error.message
    assert error.message.startswith("1 field is invalid: ")


def test_a_newer_schema_version_names_the_supported_one() -> None:
    """R10.1-01: the contract is versioned; an unknown version is refused naming ours."""
    error = _refusal(example_contract(schema="mwp.contract/2"))
    assert error.details["errors"] == [
        {
            "path": "$.contract.schema",
            "message": "unsupported contract schema 'mwp.contract/2'; supported: mwp.contract/1",
        }
    ]


def test_max_backoff_is_compared_with_a_valid_initial_backoff_only() -> None:
    """R10.1-01(h): a broken initial backoff is the one error, not also the maximum."""
    retry = {
        "max_attempts": 3,
        "initial_backoff_s": "30",
        "backoff_multiplier": 2,
        "max_backoff_s": 1,
    }
    assert _paths(_refusal(example_contract(retry=retry))) == ["$.contract.retry.initial_backoff_s"]


def test_duplicate_criterion_id_points_back_at_the_first() -> None:
    """R10.1-01(b): evidence names a criterion by id, so criterion ids are unique."""
    criteria = example_contract()["acceptance_criteria"]
    criteria.append({**criteria[0], "description": "again"})
    error = _refusal(example_contract(acceptance_criteria=criteria))
    assert error.details["errors"] == [
        {
            "path": "$.contract.acceptance_criteria[2].id",
            "message": "duplicate criterion id (first at [0])",
        }
    ]


# --- deterministic checks and inline output schemas (R13.2-03) -------------------------------

SUMMARY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"title": {"type": "string", "minLength": 1}},
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"$ref": "#/$defs/title"}},
}
CHECKS_OF_EVERY_KIND: list[dict[str, Any]] = [
    {"check": "schema", "output": "summary", "schema": {"type": "object"}},
    {"check": "digest_present", "output": "summary"},
    {
        "check": "json_path_equals",
        "output": "summary",
        "path": "$.items[0]['odd key']",
        "value": {"a": [1, None]},
    },
    {"check": "json_path_within", "output": "summary", "path": "$.score", "min": 0},
    {"check": "text_contains", "output": "summary", "text": "November", "case_sensitive": False},
]


def _with_checks(*checks: object, criterion: int = 0) -> dict[str, Any]:
    return _edit(example_contract(), ("acceptance_criteria", criterion, "checks"), list(checks))


def test_a_deterministic_criterion_may_declare_checks_of_every_kind() -> None:
    """R13.2-03 step 2: ``checks`` is an optional, additive field of a deterministic
    criterion; the contract comes back with it unchanged."""
    contract = _with_checks(*CHECKS_OF_EVERY_KIND)
    assert validate_contract(contract) == contract
    assert validate_contract(_with_checks()) == _with_checks()


def test_an_inline_draft_2020_12_schema_with_local_references_is_valid() -> None:
    """R13.2-03 step 1: an output's inline schema is a usable JSON Schema."""
    contract = _edit(example_contract(), ("outputs", 0, "schema"), SUMMARY_SCHEMA)
    assert validate_contract(contract) == contract


CHECK_VIOLATIONS = [
    pytest.param(
        _with_checks(CHECKS_OF_EVERY_KIND[1], criterion=1),
        "$.contract.acceptance_criteria[1].checks",
        "checks are allowed only when method is deterministic",
        id="human-review-criterion",
    ),
    pytest.param(
        _edit(example_contract(), ("acceptance_criteria", 0, "checks"), {"check": "schema"}),
        "$.contract.acceptance_criteria[0].checks",
        "expected a list",
        id="not-a-list",
    ),
    pytest.param(
        _with_checks(*[CHECKS_OF_EVERY_KIND[1]] * 33),
        "$.contract.acceptance_criteria[0].checks",
        "at most 32 checks per criterion",
        id="too-many",
    ),
    pytest.param(
        _with_checks({"check": "lint", "output": "summary"}),
        "$.contract.acceptance_criteria[0].checks[0].check",
        "expected one of schema, digest_present, json_path_equals, json_path_within, text_contains",
        id="unknown-check",
    ),
    pytest.param(
        _with_checks({"check": "digest_present", "output": "report"}),
        "$.contract.acceptance_criteria[0].checks[0].output",
        "not an output the contract declares",
        id="undeclared-output",
    ),
    pytest.param(
        _with_checks(
            {"check": "json_path_equals", "output": "summary", "path": "$[*]", "value": 1}
        ),
        "$.contract.acceptance_criteria[0].checks[0].path",
        "not a path of the supported subset ($, .name, ['name'], [0]): "
        "at 2: expected an index, a quoted key or ]",
        id="bad-path",
    ),
    pytest.param(
        _with_checks({"check": "schema", "output": "summary", "schema": {"minimum": "0"}}),
        "$.contract.acceptance_criteria[0].checks[0].schema.minimum",
        "'0' is not of type 'number'",
        id="check-schema-invalid",
    ),
    pytest.param(
        _edit(example_contract(), ("outputs", 0, "schema"), {"type": "strin"}),
        "$.contract.outputs[0].schema.type",
        "'strin' is not valid under any of the given schemas",
        id="schema-unknown-type",
    ),
    pytest.param(
        _edit(example_contract(), ("outputs", 0, "schema"), {"$ref": "https://e.org/s.json"}),
        '$.contract.outputs[0].schema["$ref"]',
        "a reference must resolve inside the schema; nothing is fetched",
        id="schema-remote-ref",
    ),
    pytest.param(
        _edit(example_contract(), ("outputs", 0, "schema"), {"$ref": "#"}),
        "$.contract.outputs[0].schema",
        "a reference loops back without consuming the document",
        id="schema-ref-loop",
    ),
    pytest.param(
        _edit(
            example_contract(),
            ("outputs", 0, "schema"),
            {"$schema": "http://json-schema.org/draft-07/schema#"},
        ),
        '$.contract.outputs[0].schema["$schema"]',
        "inline schemas are JSON Schema Draft 2020-12 (https://json-schema.org/draft/2020-12/schema)",
        id="schema-other-dialect",
    ),
    pytest.param(
        _edit(example_contract(), ("outputs", 0, "schema"), {"pattern": "("}),
        "$.contract.outputs[0].schema.pattern",
        "pattern '(' is refused: missing ): ( "
        "(patterns are RE2 syntax: no lookahead, lookbehind or backreferences)",
        id="schema-bad-regex",
    ),
    pytest.param(
        _edit(example_contract(), ("outputs", 0, "schema"), {"pattern": "^(?!draft)"}),
        "$.contract.outputs[0].schema.pattern",
        "pattern '^(?!draft)' is refused: invalid perl operator: (?! "
        "(patterns are RE2 syntax: no lookahead, lookbehind or backreferences)",
        id="schema-lookahead",
    ),
    pytest.param(
        _with_checks(
            {
                "check": "schema",
                "output": "summary",
                "schema": {"patternProperties": {"^(a)\\1$": {}}},
            }
        ),
        "$.contract.acceptance_criteria[0].checks[0].schema.patternProperties",
        "pattern '^(a)\\\\1$' is refused: invalid escape sequence: \\1 "
        "(patterns are RE2 syntax: no lookahead, lookbehind or backreferences)",
        id="check-schema-backreference",
    ),
]


@pytest.mark.parametrize(("contract", "path", "message"), CHECK_VIOLATIONS)
def test_each_bad_check_or_inline_schema_is_named_by_path(
    contract: dict[str, Any], path: str, message: str
) -> None:
    """R13.2-03, R10.1-01: a check the authority could not run, or a schema it could not
    evaluate, is CONTRACT_INVALID at its exact path when the contract is validated."""
    error = _refusal(contract)
    assert error.details["errors"] == [{"path": path, "message": message}]


def test_every_bad_check_is_reported_in_one_answer() -> None:
    """R10.1-01: each check's problems are collected with the rest of the contract's."""
    contract = _with_checks(
        {"check": "text_contains", "output": "summary"},
        {"check": "json_path_within", "output": "nowhere", "path": "$.a", "min": 1, "max": 0},
    )
    assert _paths(_refusal(contract)) == [
        "$.contract.acceptance_criteria[0].checks[0].text",
        "$.contract.acceptance_criteria[0].checks[1].max",
        "$.contract.acceptance_criteria[0].checks[1].output",
    ]


def test_an_undeclared_output_is_not_reported_while_outputs_is_broken() -> None:
    """R10.1-01: a broken ``outputs`` list is one error where it is, not one per check."""
    contract = _with_checks({"check": "digest_present", "output": "report"})
    contract["outputs"] = "summary"
    assert _paths(_refusal(contract)) == ["$.contract.outputs"]


def test_an_output_with_an_inline_schema_is_the_only_output_of_its_name() -> None:
    """R13.2-03: work.submit maps a name to one artifact, held to that output's schema; two
    outputs of one name stay valid as long as neither has an inline schema."""
    twice = [{"name": "summary", "media_type": "text/markdown", "schema": None}] * 2
    assert validate_contract(example_contract(outputs=twice)) == example_contract(outputs=twice)
    with_schema = [twice[0], {**twice[1], "schema": {"type": "object"}}]
    error = _refusal(example_contract(outputs=with_schema))
    assert error.details["errors"] == [
        {
            "path": "$.contract.outputs[1].name",
            "message": "duplicate name of an output with an inline schema (first at [0])",
        }
    ]


# --- every bad field at once ---------------------------------------------------------------------


def test_several_bad_fields_are_all_named_in_one_answer() -> None:
    """R10.1-01, wire§8: validation does not stop at the first bad field."""
    contract = example_contract(goal="", urgency="asap")
    contract["acceptance_criteria"][1]["method"] = "vibes"
    contract["budgets"]["money"] = -5
    contract["retry"]["max_attempts"] = 0
    del contract["risk"]["class"]
    error = _refusal(contract)
    assert _paths(error) == [
        "$.contract.goal",
        "$.contract.acceptance_criteria[1].method",
        "$.contract.urgency",
        "$.contract.budgets.money",
        "$.contract.retry.max_attempts",
        "$.contract.risk.class",
    ]
    assert error.message == (
        "6 fields are invalid: $.contract.goal, $.contract.acceptance_criteria[1].method, "
        "$.contract.urgency, $.contract.budgets.money, $.contract.retry.max_attempts "
        "and 1 more"
    )


def test_three_bad_fields_are_summarised_in_the_message() -> None:
    """wire§8: the message summarises; details carry each path with its message."""
    error = _refusal(example_contract(goal=3, deadline="tomorrow", business_impact=None))
    assert error.message == (
        "3 fields are invalid: $.contract.goal, $.contract.deadline, $.contract.business_impact"
    )
    assert all(item["message"] for item in error.details["errors"])


def test_errors_inside_every_list_entry_are_reported() -> None:
    """R10.1-01(b): each criterion is checked, not only the first bad one."""
    contract = example_contract()
    for criterion in contract["acceptance_criteria"]:
        criterion["method"] = "guess"
        criterion["evidence"] = [""]
    assert _paths(_refusal(contract)) == [
        "$.contract.acceptance_criteria[0].method",
        "$.contract.acceptance_criteria[0].evidence[0]",
        "$.contract.acceptance_criteria[1].method",
        "$.contract.acceptance_criteria[1].evidence[0]",
    ]


def test_a_huge_number_of_errors_is_capped_with_a_count_of_the_rest() -> None:
    """wire§8: the answer names the first errors and counts the omitted ones."""
    contract = example_contract(**{f"extra_{n}": n for n in range(MAX_REPORTED_ERRORS + 50)})
    error = _refusal(contract)
    assert len(error.details["errors"]) == MAX_REPORTED_ERRORS
    assert error.details["omitted"] == 50
    assert error.message.startswith(f"{MAX_REPORTED_ERRORS + 50} fields are invalid: ")


def test_a_custom_path_prefixes_every_reported_path() -> None:
    """wire§8: the caller says where the contract sits in its command body."""
    error = _refusal(example_contract(urgency="asap"), path="$.body.contract")
    assert _paths(error) == ["$.body.contract.urgency"]


# --- not an object, unknown keys, missing fields -------------------------------------------------


@pytest.mark.parametrize("contract", [None, [], "mwp.contract/1", 3, True])
def test_a_contract_that_is_not_an_object_is_one_error_at_the_root(contract: object) -> None:
    """R10.1-01: the contract is a machine-readable object."""
    error = _refusal(contract)
    assert error.details["errors"] == [{"path": "$.contract", "message": "expected an object"}]


@pytest.mark.parametrize(
    ("location", "path"),
    [
        pytest.param(("priority",), "$.contract.priority", id="top"),
        pytest.param(("x y",), '$.contract["x y"]', id="top-odd-key"),
        pytest.param(("outputs", 0, "format"), "$.contract.outputs[0].format", id="a-output"),
        pytest.param(
            ("acceptance_criteria", 1, "weight"),
            "$.contract.acceptance_criteria[1].weight",
            id="b-criterion",
        ),
        pytest.param(("inputs", 0, "uri"), "$.contract.inputs[0].uri", id="c-input"),
        pytest.param(("allowed", "network"), "$.contract.allowed.network", id="d-allowed"),
        pytest.param(
            ("capabilities", 0, "vendor"), "$.contract.capabilities[0].vendor", id="e-capability"
        ),
        pytest.param(("retry", "jitter"), "$.contract.retry.jitter", id="h-retry"),
        pytest.param(("risk", "owner"), "$.contract.risk.owner", id="i-risk"),
    ],
)
def test_unknown_keys_are_refused_by_path(location: tuple[str | int, ...], path: str) -> None:
    """R10.1-01: the schema is closed, so a misspelt field is not silently ignored."""
    error = _refusal(_edit(example_contract(), location, "x"))
    assert error.details["errors"] == [{"path": path, "message": "unknown field"}]


def test_unknown_budget_dimension_names_the_six_dimensions() -> None:
    """R10.1-01(g): budgets are keyed by the six dimensions only."""
    error = _refusal(_edit(example_contract(), ("budgets", "energy"), 1))
    (item,) = error.details["errors"]
    assert item["path"] == "$.contract.budgets.energy"
    for dimension in ("money", "tokens", "tool_calls", "compute", "wall_clock", "side_effects"):
        assert dimension in item["message"]


def test_a_client_supplied_revision_is_refused() -> None:
    """R10.1-05, wire§10: the authority assigns the revision."""
    error = _refusal(example_contract(revision=1))
    assert error.details["errors"] == [
        {"path": "$.contract.revision", "message": "assigned by the authority, not by the client"}
    ]


REQUIRED = [
    ("schema",),
    ("goal",),
    ("outputs",),
    ("outputs", 0, "name"),
    ("outputs", 0, "media_type"),
    ("outputs", 0, "schema"),
    ("acceptance_criteria",),
    ("acceptance_criteria", 1, "id"),
    ("acceptance_criteria", 1, "description"),
    ("acceptance_criteria", 1, "method"),
    ("acceptance_criteria", 1, "evidence"),
    ("inputs",),
    ("inputs", 0, "ref"),
    ("dependency_policy",),
    ("allowed",),
    ("allowed", "tools"),
    ("allowed", "data"),
    ("allowed", "operations"),
    ("resources",),
    ("resources", "max_concurrency"),
    ("capabilities",),
    ("capabilities", 0, "id"),
    ("capabilities", 0, "version"),
    ("deadline",),
    ("urgency",),
    ("business_impact",),
    ("budgets",),
    ("retry",),
    ("retry", "max_attempts"),
    ("retry", "initial_backoff_s"),
    ("retry", "backoff_multiplier"),
    ("retry", "max_backoff_s"),
    ("risk",),
    ("risk", "class"),
    ("risk", "requires_execution_approval"),
]


def _jsonpath(location: tuple[str | int, ...]) -> str:
    return "$.contract" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in location)


@pytest.mark.parametrize("location", REQUIRED, ids=_jsonpath)
def test_each_missing_required_field_is_named(location: tuple[str | int, ...]) -> None:
    """R10.1-01(a)-(i), R10.1-07: every field is required; a missing one is named by path."""
    error = _refusal(_edit(example_contract(), location, DELETE))
    assert error.details["errors"] == [{"path": _jsonpath(location), "message": "missing"}]


def test_notes_alone_cannot_replace_the_contract_fields() -> None:
    """R10.1-07: prose never replaces the fields, however complete it reads."""
    prose = (
        "Summarise the November incident reports into markdown; cover every report, stay "
        "neutral, use search on the incidents data, finish by 1 December, spend at most 5 EUR."
    )
    error = _refusal({"schema": CONTRACT_SCHEMA, "notes": prose})
    assert error.details["errors"] == [
        {"path": f"$.contract.{name}", "message": "missing"}
        for name in (
            "goal",
            "outputs",
            "acceptance_criteria",
            "inputs",
            "dependency_policy",
            "allowed",
            "resources",
            "capabilities",
            "deadline",
            "urgency",
            "business_impact",
            "budgets",
            "retry",
            "risk",
        )
    ]


def test_notes_do_not_excuse_a_single_missing_field() -> None:
    """R10.1-06, R10.1-07: prose may supplement the fields, never stand in for one."""
    contract = example_contract(notes="The deadline is the first of December.")
    del contract["deadline"]
    assert _paths(_refusal(contract)) == ["$.contract.deadline"]


# --- digest and substantial change -----------------------------------------------------------


def test_contract_digest_is_the_canonical_digest_and_ignores_key_order() -> None:
    """wire§1: digests are sha256 over RFC 8785 canonical bytes."""
    contract = example_contract()
    reordered = dict(reversed(list(contract.items())))
    assert contract_digest(contract) == digest(contract) == contract_digest(reordered)
    assert contract_digest(contract).startswith("sha256:")
    assert contract_digest(contract) != contract_digest(example_contract(urgency="high"))


def test_rewording_notes_is_not_a_substantial_change() -> None:
    """R10.1-05, R10.1-06: notes only supplement the fields; rewording them changes nothing."""
    old = validate_contract(example_contract(notes="first wording"))
    assert not is_substantial_change(old, validate_contract(example_contract(notes="second")))
    assert not is_substantial_change(old, validate_contract(example_contract()))
    assert not is_substantial_change(old, copy.deepcopy(old))


@pytest.mark.parametrize(
    ("location", "value"),
    [
        (("goal",), "Summarise the incident reports of December"),
        (("deadline",), "2026-12-02T00:00:00Z"),
        (("budgets", "money"), 6.0),
        (("budgets", "side_effects"), DELETE),
        (("acceptance_criteria", 1, "method"), "agent_review"),
        (("allowed", "tools"), ["search", "fetch"]),
        (("retry", "max_attempts"), 4),
        (("risk", "requires_execution_approval"), True),
        (("risk", "approvals_required"), 2),
        (("outputs", 0, "schema"), {"type": "string"}),
    ],
)
def test_any_other_difference_is_a_substantial_change(
    location: tuple[str | int, ...], value: object
) -> None:
    """R10.1-05: a substantially revised contract raises the revision and needs re-acceptance."""
    old = validate_contract(example_contract())
    new = validate_contract(_edit(old, location, value))
    assert is_substantial_change(old, new)
    assert is_substantial_change(new, old)


def test_spelling_out_the_default_approval_count_is_no_change() -> None:
    """R10.1-05, R10.1-01(i): approvals_required 1 and its absence mean the same contract."""
    explicit = example_contract()
    implicit = example_contract()
    del implicit["risk"]["approvals_required"]
    assert not is_substantial_change(explicit, implicit)


def test_a_revision_counter_on_a_stored_copy_is_not_content() -> None:
    """R10.1-05: the authority's revision number is not part of what the worker accepted."""
    stored = {**validate_contract(example_contract()), "revision": 3}
    assert not is_substantial_change(stored, validate_contract(example_contract()))


# --- property tests --------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=8,
)


def _locations(node: object, here: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every node below the root, as a location for :func:`_edit`."""
    found: list[tuple[str | int, ...]] = []
    children: list[tuple[str | int, object]] = []
    if isinstance(node, dict):
        children = list(node.items())
    elif isinstance(node, list):
        children = list(enumerate(node))
    for key, child in children:
        found.append((*here, key))
        found.extend(_locations(child, (*here, key)))
    return found


EXAMPLE_LOCATIONS = _locations(example_contract())


def _example_with_checks_and_schema() -> dict[str, Any]:
    contract = _with_checks(*CHECKS_OF_EVERY_KIND)
    contract["outputs"][0]["schema"] = copy.deepcopy(SUMMARY_SCHEMA)
    return contract


@st.composite
def mutated_contracts(draw: st.DrawFn) -> object:
    """The wire example, or one with checks and an inline schema (R13.2-03), with one to
    three random edits: replace, delete or add a node."""
    contract: object = draw(st.sampled_from([example_contract, _example_with_checks_and_schema]))()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        if not isinstance(contract, dict) or draw(st.integers(0, 20)) == 0:
            contract = draw(JSON_VALUES)  # now and then the whole contract is replaced
            continue
        locations = _locations(contract)
        if not locations:  # an empty object: the only edit left is to add a member
            contract[draw(st.text(max_size=12))] = draw(JSON_VALUES)
            continue
        location = draw(st.sampled_from(locations))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        parent: Any = contract
        for step in location[:-1]:
            parent = parent[step]
        if action == "replace" or not isinstance(parent, dict | list):
            parent[location[-1]] = draw(JSON_VALUES)
        elif action == "delete":
            del parent[location[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = draw(JSON_VALUES)
        else:
            parent.append(draw(JSON_VALUES))
    return contract


@settings(max_examples=300, deadline=None)
@given(mutated_contracts())
def test_random_mutations_only_ever_raise_contract_invalid(contract: object) -> None:
    """R10.1-01, wire§8: no input makes validation fail any other way than CONTRACT_INVALID."""
    refusal: ProtocolError | None = None
    try:
        normalised = validate_contract(contract)
    except ProtocolError as error:
        refusal = error
    if refusal is not None:
        assert refusal.code is ErrorCode.CONTRACT_INVALID
        assert refusal.requirement == "R10.1-01"
        assert refusal.details["errors"]
        for item in refusal.details["errors"]:
            assert item["path"].startswith("$.contract")
            assert item["message"]
        json.dumps(refusal.as_body())  # the wire§8 body is always serialisable
        return
    assert validate_contract(normalised) == normalised
    assert json.loads(json.dumps(normalised)) == normalised
    assert contract_digest(normalised) == contract_digest(json.loads(json.dumps(normalised)))


NAMES = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12
).filter(str.strip)
IDS = st.from_regex(r"\A[A-Za-z0-9._:-]{1,16}\Z")
NON_NEGATIVE = st.integers(min_value=0, max_value=10**9) | st.floats(
    min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False
)


#: valid Draft 2020-12 schemas: a few real ones, and objects of annotations (``x-`` keys are
#: not keywords, so any scalar is allowed under them)
INLINE_SCHEMAS = st.sampled_from(
    [
        {},
        {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}},
        {"$defs": {"n": {"type": "integer"}}, "type": "array", "items": {"$ref": "#/$defs/n"}},
    ]
) | st.dictionaries(NAMES.map("x-{}".format), JSON_SCALARS, max_size=3)


@st.composite
def valid_contracts(draw: st.DrawFn) -> dict[str, Any]:
    """Contracts built field by field from the schema's allowed values."""
    criterion_ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    initial = draw(NON_NEGATIVE)
    contract: dict[str, Any] = {
        "schema": CONTRACT_SCHEMA,
        "goal": draw(NAMES),
        "outputs": draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "name": NAMES,
                        "media_type": NAMES,
                        "schema": st.none() | NAMES | INLINE_SCHEMAS,
                    }
                ),
                min_size=1,
                max_size=3,
                # an output with an inline schema is the only output of its name (R13.2-03)
                unique_by=lambda output: output["name"],
            )
        ),
        "acceptance_criteria": [
            {
                "id": criterion_id,
                "description": draw(NAMES),
                "method": draw(st.sampled_from(["deterministic", "agent_review", "human_review"])),
                "evidence": draw(st.lists(NAMES, max_size=3)),
            }
            for criterion_id in criterion_ids
        ],
        "inputs": [
            {"ref": sha256_digest(data)} for data in draw(st.lists(st.binary(), max_size=3))
        ],
        "dependency_policy": draw(st.sampled_from(["all_verified", "all_terminal"])),
        "allowed": {
            "tools": draw(st.lists(NAMES, max_size=3)),
            "data": draw(st.lists(NAMES, max_size=3)),
            "operations": draw(st.lists(NAMES, max_size=3)),
        },
        "resources": {
            "max_concurrency": draw(st.integers(min_value=1, max_value=64)),
            **draw(st.dictionaries(IDS.filter(lambda s: s != "max_concurrency"), NON_NEGATIVE)),
        },
        "capabilities": draw(
            st.lists(st.fixed_dictionaries({"id": NAMES, "version": NAMES}), max_size=3)
        ),
        "deadline": draw(
            st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2999, 12, 31)).map(
                lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            )
        ),
        "urgency": draw(st.sampled_from(["low", "normal", "high", "critical"])),
        "business_impact": draw(st.sampled_from(["low", "medium", "high", "critical"])),
        "budgets": draw(
            st.dictionaries(
                st.sampled_from(
                    ["money", "tokens", "tool_calls", "compute", "wall_clock", "side_effects"]
                ),
                NON_NEGATIVE,
            )
        ),
        "retry": {
            "max_attempts": draw(st.integers(min_value=1, max_value=100)),
            "initial_backoff_s": initial,
            "backoff_multiplier": draw(st.floats(min_value=1, max_value=10)),
            "max_backoff_s": initial + draw(NON_NEGATIVE),
        },
        "risk": {
            "class": draw(st.sampled_from(["low", "medium", "high", "critical"])),
            "requires_execution_approval": draw(st.booleans()),
        },
    }
    if draw(st.booleans()):
        contract["risk"]["approvals_required"] = draw(st.integers(min_value=1, max_value=5))
    if draw(st.booleans()):
        contract["notes"] = draw(st.text(max_size=40))
    return contract


@settings(max_examples=150, deadline=None)
@given(valid_contracts())
def test_valid_contracts_round_trip_through_json_unchanged(contract: dict[str, Any]) -> None:
    """R10.1-01: a valid contract validates to itself (defaults filled), also after JSON."""
    normalised = validate_contract(contract)
    expected = copy.deepcopy(contract)
    expected["risk"].setdefault("approvals_required", 1)
    assert normalised == expected
    round_tripped = validate_contract(json.loads(json.dumps(normalised)))
    assert round_tripped == normalised
    assert contract_digest(round_tripped) == contract_digest(normalised)
    assert not is_substantial_change(contract, normalised)
