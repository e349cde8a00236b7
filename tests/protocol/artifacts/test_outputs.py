"""The ``outputs`` map of ``work.submit`` and output schemas (R13.2-02, R13.2-03), no database."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.artifacts.outputs import (
    MAX_SCHEMA_OUTPUT_BYTES,
    check_outputs,
    parse_json_output,
    schema_outputs,
    validate_against_schema,
    validate_outputs_field,
)
from missionweave.protocol.artifacts.schemas import (
    MAX_COLLECTED_ERRORS,
    MAX_SHOWN_ERRORS,
    validate_document,
)
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import example_contract

REPORT = sha256_digest(b"report")
SUMMARY = sha256_digest(b"summary")
OTHER = sha256_digest(b"other")

ITEMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["title"],
                "properties": {"title": {"type": "string"}, "count": {"type": "integer"}},
            },
        }
    },
}


def _contract(*outputs: tuple[str, object]) -> dict[str, Any]:
    return example_contract(
        outputs=[
            {"name": name, "media_type": "application/json", "schema": schema}
            for name, schema in outputs
        ]
    )


def _refused(call: Any, *args: Any, **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        call(*args, **kwargs)
    return caught.value


def _error_of(call: Any, *args: Any, **kwargs: Any) -> ProtocolError | None:
    """The refusal ``call`` raises, or None when it returns."""
    try:
        call(*args, **kwargs)
    except ProtocolError as error:
        return error
    return None


# --- the field's shape --------------------------------------------------------------------


def test_a_map_of_names_to_digests_is_accepted_as_is() -> None:
    """R13.2-02: ``outputs`` maps output names to sha256 digests."""
    value = {"report": REPORT, "odd name": SUMMARY}
    assert validate_outputs_field(value) == value


@pytest.mark.parametrize(
    ("value", "path"),
    [
        pytest.param([REPORT], "$.outputs", id="a-list"),
        pytest.param(None, "$.outputs", id="null"),
        pytest.param({"report": "sha256:ABC"}, "$.outputs.report", id="bad-digest"),
        pytest.param({"report": 5}, "$.outputs.report", id="not-a-string"),
        pytest.param({"odd name": "x"}, '$.outputs["odd name"]', id="odd-key-quoted"),
        pytest.param({" ": REPORT}, '$.outputs[" "]', id="blank-name"),
    ],
)
def test_a_misshapen_outputs_field_is_malformed_naming_the_entry(value: object, path: str) -> None:
    """R13.2-02: a bad ``outputs`` is 400 MALFORMED with the JSON path of the bad entry."""
    error = _refused(validate_outputs_field, value)
    assert error.code is ErrorCode.MALFORMED
    assert error.status == 400
    assert error.requirement == "R13.2-02"
    assert error.details["path"] == path


# --- the map against the contract and the submission ---------------------------------------


def test_a_complete_map_of_declared_outputs_passes() -> None:
    """R13.2-02: every declared output mapped to a submitted artifact."""
    contract = _contract(("report", ITEMS_SCHEMA), ("summary", None))
    check_outputs(contract, {"report": REPORT, "summary": SUMMARY}, [REPORT, SUMMARY])


def test_an_undeclared_output_name_is_malformed_naming_it() -> None:
    """R13.2-02: the submission, not the contract, is wrong: MALFORMED at $.outputs.<name>."""
    contract = _contract(("report", None))
    error = _refused(check_outputs, contract, {"reprot": REPORT}, [REPORT])
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == "$.outputs.reprot"
    assert error.requirement == "R13.2-02"


def test_a_mapped_digest_must_be_among_the_submitted_artifacts() -> None:
    """R13.2-02: the map points into ``artifacts``; anything else contradicts the submission."""
    contract = _contract(("report", None))
    error = _refused(check_outputs, contract, {"report": OTHER}, [REPORT])
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == "$.outputs.report"
    assert OTHER in error.message


def test_an_output_with_an_inline_schema_must_be_mapped() -> None:
    """R13.2-03 step 1: an output with a schema cannot be checked unless the map names it,
    so leaving it out is EVIDENCE_MISSING listing it, even with artifacts to spare."""
    contract = _contract(("report", ITEMS_SCHEMA), ("summary", None))
    error = _refused(check_outputs, contract, {}, [REPORT, SUMMARY, OTHER])
    assert error.code is ErrorCode.EVIDENCE_MISSING
    assert error.status == 409
    assert error.requirement == "R13.2-03"
    assert error.details == {"missing": ["report"]}


def test_without_a_map_one_artifact_per_declared_output_is_enough() -> None:
    """R13.2-02: outputs without schemas may be left unmapped, counted by artifacts."""
    contract = _contract(("report", None), ("summary", "https://example.org/s.json"))
    check_outputs(contract, {}, [REPORT, SUMMARY])


def test_too_few_artifacts_leave_the_last_outputs_missing() -> None:
    """R13.2-02: fewer distinct artifacts than declared outputs is EVIDENCE_MISSING; the
    outputs reported are the last ones, in contract order, and a repeated digest counts once."""
    contract = _contract(("a", None), ("b", None), ("c", None))
    error = _refused(check_outputs, contract, {}, [REPORT, REPORT])
    assert error.code is ErrorCode.EVIDENCE_MISSING
    assert error.requirement == "R13.2-02"
    assert error.details == {"missing": ["b", "c"]}


def test_a_partial_map_needs_spare_artifacts_for_the_unmapped_outputs() -> None:
    """R13.2-02: a mapped artifact stands for its output only, not for another one too."""
    contract = _contract(("a", None), ("b", None))
    error = _refused(check_outputs, contract, {"a": REPORT}, [REPORT])
    assert error.details == {"missing": ["b"]}
    check_outputs(contract, {"a": REPORT}, [REPORT, SUMMARY])


def test_one_artifact_may_stand_for_two_outputs_when_mapped_so() -> None:
    """R13.2-02: two outputs with identical bytes share a digest; the map says so."""
    contract = _contract(("a", None), ("b", None))
    check_outputs(contract, {"a": REPORT, "b": REPORT}, [REPORT])


def test_schema_outputs_lists_only_inline_schemas() -> None:
    """R13.2-03: a null or string schema is not something the authority can check."""
    contract = _contract(("a", ITEMS_SCHEMA), ("b", None), ("c", "https://example.org/c.json"))
    assert schema_outputs(contract) == {"a": ITEMS_SCHEMA}


# --- an output's bytes against its schema --------------------------------------------------


def test_a_matching_output_passes() -> None:
    """R13.2-03 step 1: an output that satisfies its inline schema is accepted."""
    document = parse_json_output(b'{"items": [{"title": "a", "count": 2}]}', output="report")
    validate_against_schema(document, ITEMS_SCHEMA, output="report")


def test_a_failing_output_names_the_output_and_the_path_inside_it() -> None:
    """R13.2-03: 400 MALFORMED with the failing JSON path inside the output document."""
    document = {"items": [{"title": "a"}, {"title": "b"}, {"count": 1}]}
    error = _refused(validate_against_schema, document, ITEMS_SCHEMA, output="report")
    assert error.code is ErrorCode.MALFORMED
    assert error.status == 400
    assert error.requirement == "R13.2-03"
    assert error.details["output"] == "report"
    assert error.details["path"] == "$.items[2]"
    assert error.details["schema_path"] == "$.properties.items.items.required"
    assert "'report'" in error.message
    assert "$.items[2]" in error.message
    assert error.details["errors"] == [
        {
            "path": "$.items[2]",
            "message": "'title' is a required property",
            "schema_path": "$.properties.items.items.required",
        }
    ]


def test_errors_are_sorted_by_path_then_message_and_capped() -> None:
    """R13.2-03: the same submission always gets the same answer; at most 10 errors shown
    and ``omitted`` counts the rest collected."""
    document = {"items": [{"title": i, "count": "x"} for i in range(30)]}
    error = _refused(validate_against_schema, document, ITEMS_SCHEMA, output="report")
    shown = error.details["errors"]
    assert len(shown) == MAX_SHOWN_ERRORS
    keys = [(item["path"], item["message"]) for item in shown]
    assert keys == sorted(keys)
    assert error.details["omitted"] == 60 - MAX_SHOWN_ERRORS
    assert error.details["path"] == shown[0]["path"]


def test_collecting_errors_stops_at_the_bound() -> None:
    """R13.2-03: a hostile output cannot make validation collect unboundedly many errors."""
    report = validate_document(list(range(1000)), {"items": {"type": "string"}})
    assert report.collected == MAX_COLLECTED_ERRORS
    assert report.omitted == MAX_COLLECTED_ERRORS - MAX_SHOWN_ERRORS


def test_unique_items_is_linear_and_uses_json_equality() -> None:
    """R13.2-03: ``uniqueItems`` over many objects answers at once; ``1`` equals ``1.0`` but
    ``true`` does not equal ``1``."""
    many = [{"n": i} for i in range(200_000)]
    assert validate_document(many, {"uniqueItems": True}).valid
    assert not validate_document([{"a": 1}, {"a": 1.0}], {"uniqueItems": True}).valid
    assert validate_document([True, 1], {"uniqueItems": True}).valid


def test_format_is_an_annotation_not_an_assertion() -> None:
    """R13.2-03: ``format`` is not asserted, so the answer does not depend on which optional
    format checkers happen to be installed."""
    validate_against_schema("not an email", {"format": "email"}, output="contact")


def test_an_unevaluable_schema_is_the_contracts_fault() -> None:
    """R13.2-03: a schema that loops is CONTRACT_INVALID naming the output, never blamed on
    the worker's output (the contract validator refuses such schemas up front)."""
    error = _refused(validate_against_schema, 1, {"$ref": "#"}, output="report")
    assert error.code is ErrorCode.CONTRACT_INVALID
    assert error.details == {"output": "report"}


def test_a_remote_reference_is_never_fetched() -> None:
    """R13.2-03: the protocol core does no I/O; an outside $ref is unresolvable, not fetched."""
    schema = {"$ref": "http://127.0.0.1:9/schema.json"}
    error = _refused(validate_against_schema, 1, schema, output="report")
    assert error.code is ErrorCode.CONTRACT_INVALID


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b'{"a": 1, "a": 2}', "duplicate key", id="duplicate-key"),
        pytest.param(b"[NaN]", "NaN", id="nan"),
        pytest.param(b"\xff", "UTF-8", id="not-utf8"),
        pytest.param(b"[" * 40 + b"]" * 40, "nesting", id="too-deep"),
        pytest.param(b"", "not JSON", id="empty"),
    ],
)
def test_an_output_that_is_not_strict_json_is_malformed_naming_it(data: bytes, reason: str) -> None:
    """R13.2-03, wire§1: an output held to a schema is parsed as strictly as a request body."""
    error = _refused(parse_json_output, data, output="report")
    assert error.code is ErrorCode.MALFORMED
    assert error.requirement == "R13.2-03"
    assert error.details["output"] == "report"
    assert error.details["path"] == "$"
    assert reason in error.message


def test_an_output_over_the_bound_is_too_large_naming_it() -> None:
    """R13.2-03: a schema is checked on at most 8 MiB; more is 413 TOO_LARGE, not parsed."""
    data = b" " * (MAX_SCHEMA_OUTPUT_BYTES + 1)
    error = _refused(parse_json_output, data, output="report")
    assert error.code is ErrorCode.TOO_LARGE
    assert error.status == 413
    assert error.details == {
        "output": "report",
        "size": MAX_SCHEMA_OUTPUT_BYTES + 1,
        "limit": MAX_SCHEMA_OUTPUT_BYTES,
    }


# --- properties ----------------------------------------------------------------------------

#: text the strict parser accepts: no lone surrogates, no U+0000
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)
    | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)
SCHEMAS = st.sampled_from(
    [
        ITEMS_SCHEMA,
        {"type": "string", "maxLength": 3},
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
        {"anyOf": [{"type": "boolean"}, {"const": {"a": [1, 2]}}]},
        {"properties": {"x y": {"minimum": 0}}, "required": ["x y"]},
    ]
)


@settings(max_examples=300)
@given(document=JSON_VALUES, schema=SCHEMAS)
def test_every_schema_refusal_names_a_path_inside_the_output(
    document: Any, schema: dict[str, Any]
) -> None:
    """R13.2-03: validation either passes or is MALFORMED with ``$``-rooted paths that are
    sorted and capped, and the same document always gets the same refusal."""
    data = json.dumps(document).encode()
    parsed = parse_json_output(data, output="out")
    error = _error_of(validate_against_schema, parsed, schema, output="out")
    if error is None:
        return
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"].startswith("$")
    errors = error.details["errors"]
    assert 1 <= len(errors) <= MAX_SHOWN_ERRORS
    assert all(item["path"].startswith("$") for item in errors)
    keys = [(item["path"], item["message"]) for item in errors]
    assert keys == sorted(keys)
    again = _refused(validate_against_schema, parsed, schema, output="out")
    assert again.as_body() == error.as_body()


@settings(max_examples=300)
@given(data=st.binary(max_size=64))
def test_parsing_any_bytes_gives_json_or_a_malformed_refusal(data: bytes) -> None:
    """R13.2-03: no input escapes as anything but a MALFORMED refusal naming the output."""
    error = _error_of(parse_json_output, data, output="out")
    if error is not None:
        assert error.code is ErrorCode.MALFORMED
        assert error.details["path"] == "$"
