"""Named deterministic checks (R13.2-03 step 2): parameters, verdicts and totality."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.artifacts.deterministic import (
    CHECKS,
    MAX_CHECKED_OUTPUT_BYTES,
    VERDICTS,
    json_equal,
    run_check,
    run_criterion_checks,
    validate_check,
)
from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.validation import find_private_reasoning

REPORT: dict[str, Any] = {
    "status": "complete",
    "score": 0.8,
    "count": 3,
    "flag": True,
    "items": [{"title": "a"}, {"title": "b"}],
    "odd key": {"reasoning": "never echoed"},
}
REPORT_BYTES = json.dumps(REPORT).encode()

#: one valid check of each kind, on the output "report"
VALID_CHECKS: dict[str, dict[str, Any]] = {
    "schema": {
        "check": "schema",
        "output": "report",
        "schema": {"type": "object", "required": ["status"]},
    },
    "digest_present": {"check": "digest_present", "output": "report"},
    "json_path_equals": {
        "check": "json_path_equals",
        "output": "report",
        "path": "$.status",
        "value": "complete",
    },
    "json_path_within": {
        "check": "json_path_within",
        "output": "report",
        "path": "$.score",
        "min": 0.5,
        "max": 1,
    },
    "text_contains": {
        "check": "text_contains",
        "output": "report",
        "text": "COMPLETE",
        "case_sensitive": False,
    },
}


def _run(kind: str, data: bytes | None = REPORT_BYTES, **params: Any) -> dict[str, Any]:
    return run_check({**VALID_CHECKS[kind], **params}, data)


def test_the_registry_offers_exactly_the_documented_checks() -> None:
    """R13.2-03: the five named checks of docs/protocol.md."""
    assert set(CHECKS) == set(VALID_CHECKS)
    for check in VALID_CHECKS.values():
        assert validate_check(check, "$.c") == []


# --- parameters, at contract validation time ----------------------------------------------


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        pytest.param([], [("$.c", "expected an object")], id="not-an-object"),
        pytest.param(
            {"output": "report"},
            [("$.c.check", "missing")],
            id="no-check-name",
        ),
        pytest.param(
            {"check": "lint", "output": "report"},
            [("$.c.check", "expected one of " + ", ".join(CHECKS))],
            id="unknown-check",
        ),
        pytest.param(
            {"check": "digest_present"},
            [("$.c.output", "missing")],
            id="no-output",
        ),
        pytest.param(
            {"check": "digest_present", "output": "report", "path": "$.a"},
            [("$.c.path", "unknown field")],
            id="param-of-another-check",
        ),
        pytest.param(
            {"check": "schema", "output": "report", "schema": {"type": 5}},
            [("$.c.schema.type", "5 is not valid under any of the given schemas")],
            id="invalid-schema",
        ),
        pytest.param(
            {"check": "schema", "output": "report", "schema": {"$ref": "https://e.org/s"}},
            [
                (
                    '$.c.schema["$ref"]',
                    "a reference must resolve inside the schema; nothing is fetched",
                )
            ],
            id="remote-ref",
        ),
        pytest.param(
            {"check": "json_path_equals", "output": "report", "path": "$..a"},
            [
                (
                    "$.c.path",
                    "not a path of the supported subset ($, .name, ['name'], [0]): "
                    "at 1: .name needs a name of [A-Za-z_][A-Za-z0-9_]*",
                ),
                ("$.c.value", "missing"),
            ],
            id="bad-path-no-value",
        ),
        pytest.param(
            {"check": "json_path_within", "output": "report", "path": "$.a"},
            [("$.c", "expected min, max or both")],
            id="no-bounds",
        ),
        pytest.param(
            {"check": "json_path_within", "output": "report", "path": "$.a", "min": 2, "max": 1},
            [("$.c.max", "less than min")],
            id="empty-range",
        ),
        pytest.param(
            {"check": "json_path_within", "output": "report", "path": "$.a", "min": True},
            [("$.c.min", "expected a number")],
            id="bool-bound",
        ),
        pytest.param(
            {"check": "text_contains", "output": "report", "text": " ", "case_sensitive": 1},
            [
                ("$.c.text", "expected a non-empty string"),
                ("$.c.case_sensitive", "expected true or false"),
            ],
            id="blank-text-and-non-bool",
        ),
    ],
)
def test_bad_checks_are_reported_at_their_path(
    check: object, expected: list[tuple[str, str]]
) -> None:
    """R13.2-03: a bad check is refused when the contract is validated, naming each field."""
    assert validate_check(check, "$.c") == expected


# --- verdicts ------------------------------------------------------------------------------


def test_schema_passes_a_matching_output_and_fails_listing_errors_with_paths() -> None:
    """R13.2-03 step 2: the schema check is Draft 2020-12 validation of the parsed output."""
    assert _run("schema")["verdict"] == "pass"
    outcome = _run("schema", schema={"properties": {"items": {"items": {"required": ["id"]}}}})
    assert outcome["verdict"] == "fail"
    assert [e["path"] for e in outcome["data"]["errors"]] == ["$.items[0]", "$.items[1]"]
    assert outcome["data"]["check"] == "schema"
    assert outcome["data"]["output"] == "report"
    assert "$.items[0]" in outcome["summary"]


def test_a_check_over_unparseable_json_fails_saying_so() -> None:
    """R13.2-03: bytes that are not JSON fail a JSON check; they never raise."""
    outcome = _run("json_path_equals", b'{"status": "complete",}')
    assert outcome["verdict"] == "fail"
    assert "is not JSON" in outcome["summary"]
    assert outcome["data"]["json"] is False


def test_digest_present_passes_when_mapped_and_fails_when_not() -> None:
    """R13.2-03: the output is mapped to a submitted artifact; never inconclusive."""
    assert _run("digest_present", b"")["verdict"] == "pass"
    assert _run("digest_present", None)["verdict"] == "fail"


def test_content_checks_fail_when_the_output_is_not_mapped() -> None:
    """R13.2-03: an output never submitted does not meet any rule about its content."""
    for kind in ("schema", "json_path_equals", "json_path_within", "text_contains"):
        outcome = _run(kind, None)
        assert outcome["verdict"] == "fail"
        assert "not mapped" in outcome["summary"]


@pytest.mark.parametrize(
    ("path", "value", "verdict"),
    [
        pytest.param("$.status", "complete", "pass", id="string"),
        pytest.param("$.count", 3.0, "pass", id="int-equals-float"),
        pytest.param("$.flag", 1, "fail", id="true-is-not-1"),
        pytest.param("$.items[1]", {"title": "b"}, "pass", id="object"),
        pytest.param("$.items[2]", None, "fail", id="absent-is-not-null"),
        pytest.param("$.status", "done", "fail", id="different"),
    ],
)
def test_json_path_equals_uses_json_equality(path: str, value: object, verdict: str) -> None:
    """R13.2-03: 1 == 1.0, true != 1, and a missing value never equals anything."""
    assert _run("json_path_equals", path=path, value=value)["verdict"] == verdict


def test_json_path_equals_shows_scalars_and_only_the_shape_of_containers() -> None:
    """R13.2-05: data shows the actual scalar, but never an object from the output, whose keys
    could include ``reasoning`` and make the evidence unrecordable."""
    outcome = _run("json_path_equals", path="$.status", value="done")
    assert outcome["data"]["actual"] == "complete"
    outcome = _run("json_path_equals", path='$["odd key"]', value=1)
    assert outcome["data"]["actual_type"] == "object"
    assert "actual" not in outcome["data"]
    assert find_private_reasoning(outcome) is None


@pytest.mark.parametrize(
    ("params", "verdict"),
    [
        pytest.param({"min": 0.5, "max": 1}, "pass", id="inside"),
        pytest.param({"min": 0.8}, "pass", id="at-min"),
        pytest.param({"max": 0.8}, "pass", id="at-max"),
        pytest.param({"min": 0.9}, "fail", id="below"),
        pytest.param({"path": "$.flag", "min": 0}, "fail", id="bool-is-not-a-number"),
        pytest.param({"path": "$.status", "min": 0}, "fail", id="string"),
        pytest.param({"path": "$.missing", "min": 0}, "fail", id="absent"),
    ],
)
def test_json_path_within_bounds_numbers_inclusively(params: dict[str, Any], verdict: str) -> None:
    """R13.2-03: a number within [min, max]; anything else fails."""
    check = {"check": "json_path_within", "output": "report", "path": "$.score", **params}
    assert run_check(check, REPORT_BYTES)["verdict"] == verdict


def test_text_contains_respects_case_and_refuses_invalid_utf8_clearly() -> None:
    """R13.2-03: text checks read UTF-8; invalid bytes fail with a summary that says so."""
    assert _run("text_contains")["verdict"] == "pass"
    assert _run("text_contains", case_sensitive=True)["verdict"] == "fail"
    assert _run("text_contains", "Straße".encode(), text="STRASSE")["verdict"] == "pass"
    outcome = _run("text_contains", b"complete \xff")
    assert outcome["verdict"] == "fail"
    assert "not UTF-8" in outcome["summary"]
    assert outcome["data"]["offset"] == 9


def test_an_output_over_the_bound_is_inconclusive() -> None:
    """R13.2-03: a check reads at most 8 MiB; beyond that it could not be applied."""
    outcome = _run("text_contains", b"x" * (MAX_CHECKED_OUTPUT_BYTES + 1))
    assert outcome["verdict"] == "inconclusive"


def test_an_invalid_check_or_an_unevaluable_schema_is_inconclusive() -> None:
    """R13.2-03: a rule the authority cannot apply decides nothing either way."""
    assert run_check({"check": "lint", "output": "report"}, b"")["verdict"] == "inconclusive"
    assert run_check("not a check", b"")["verdict"] == "inconclusive"
    assert _run("schema", schema={"$ref": "#"})["verdict"] == "inconclusive"


def test_json_equal_is_equality_of_canonical_json() -> None:
    """R13.2-03: key order does not matter, number form does not matter, types do."""
    assert json_equal({"a": 1, "b": [1.0]}, {"b": [1], "a": 1.0})
    assert not json_equal(True, 1)
    assert not json_equal(None, False)
    assert not json_equal("1", 1)


# --- one criterion, several checks ---------------------------------------------------------


def _criterion(*checks: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c1", "method": "deterministic", "checks": list(checks)}


def test_a_criterion_passes_only_when_every_check_passes() -> None:
    """R13.2-03: one result per criterion; data lists each check's own result in order."""
    criterion = _criterion(VALID_CHECKS["schema"], VALID_CHECKS["json_path_within"])
    outcome = run_criterion_checks(criterion, {"report": REPORT_BYTES})
    assert outcome["verdict"] == "pass"
    assert outcome["summary"] == "all 2 checks passed"
    assert [c["data"]["check"] for c in outcome["data"]["checks"]] == ["schema", "json_path_within"]


def test_a_failure_outranks_an_inconclusive_check() -> None:
    """R13.2-03: fail if any fails; else inconclusive if any is; else pass."""
    failing = {**VALID_CHECKS["json_path_equals"], "value": "done"}
    unsure = {**VALID_CHECKS["schema"], "schema": {"$ref": "#"}}
    outputs = {"report": REPORT_BYTES}
    outcome = run_criterion_checks(_criterion(unsure, failing), outputs)
    assert outcome["verdict"] == "fail"
    assert outcome["summary"] == "1 of 2 checks failed: json_path_equals"
    outcome = run_criterion_checks(_criterion(unsure, VALID_CHECKS["schema"]), outputs)
    assert outcome["verdict"] == "inconclusive"


def test_a_criterion_without_checks_is_inconclusive() -> None:
    """R13.2-03: the authority has no rule to run, so it decides nothing."""
    outcome = run_criterion_checks({"id": "c1", "method": "deterministic"}, {})
    assert outcome["verdict"] == "inconclusive"


def test_a_check_on_an_output_absent_from_the_map_gets_none() -> None:
    """R13.2-03: an output the submission did not map is ``None`` to its checks."""
    outcome = run_criterion_checks(_criterion(VALID_CHECKS["digest_present"]), {})
    assert outcome["verdict"] == "fail"


# --- totality ------------------------------------------------------------------------------

#: bytes that look like JSON some of the time, so the checks get past parsing too
JSONISH = st.binary(max_size=200) | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["status", "score", "items", "reasoning", "0", ""])
            | st.text(max_size=4),
            children,
            max_size=4,
        )
    ),
    max_leaves=15,
).map(lambda value: json.dumps(value).encode())


def _assert_result(outcome: dict[str, Any]) -> None:
    assert set(outcome) == {"verdict", "summary", "data"}
    assert outcome["verdict"] in VERDICTS
    assert isinstance(outcome["summary"], str)
    assert outcome["summary"]
    assert len(outcome["summary"]) <= 1000
    assert isinstance(outcome["data"], dict)
    canonical_bytes(outcome)  # recordable: JSON that RFC 8785 can hash
    assert find_private_reasoning(outcome) is None  # R13.2-05


@settings(max_examples=300)
@given(kind=st.sampled_from(sorted(VALID_CHECKS)), data=JSONISH | st.none())
def test_every_check_is_total_over_any_bytes(kind: str, data: bytes | None) -> None:
    """R13.2-03: any bytes (or none) give a recordable result, never an exception."""
    _assert_result(run_check(VALID_CHECKS[kind], data))


PATHS = st.sampled_from(["$", "$.status", "$.items[0]", "$.score", "$['0']", '$[""]', "$[3]"])


@settings(max_examples=300)
@given(
    path=PATHS,
    value=st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    low=st.none() | st.integers(-10, 10) | st.floats(-10, 10),
    data=JSONISH,
)
def test_path_checks_are_total_for_any_valid_parameters(
    path: str, value: object, low: float | None, data: bytes
) -> None:
    """R13.2-03: whatever the path and bounds, the result is a verdict."""
    equals = {"check": "json_path_equals", "output": "o", "path": path, "value": value}
    within = {"check": "json_path_within", "output": "o", "path": path, "max": 10}
    if low is not None:
        within["min"] = low
    for check in (equals, within):
        assert validate_check(check, "$") == []
        _assert_result(run_check(check, data))


@settings(max_examples=100)
@given(checks=st.lists(st.sampled_from(sorted(VALID_CHECKS)), max_size=5), data=JSONISH)
def test_criterion_verdict_is_the_worst_of_its_checks(checks: list[str], data: bytes) -> None:
    """R13.2-03: fail > inconclusive > pass, whatever the mix."""
    outcome = run_criterion_checks(
        _criterion(*(VALID_CHECKS[kind] for kind in checks)), {"report": data}
    )
    _assert_result(outcome)
    verdicts = {item["verdict"] for item in outcome["data"]["checks"]}
    if not checks:
        assert outcome["verdict"] == "inconclusive"
    elif "fail" in verdicts:
        assert outcome["verdict"] == "fail"
    elif "inconclusive" in verdicts:
        assert outcome["verdict"] == "inconclusive"
    else:
        assert outcome["verdict"] == "pass"
