"""A contract's patterns run on RE2 (R13.2-03 step 1, wire.md §10), no database.

What must hold: a catastrophic pattern against a 100 KB output costs well under 50 ms in the
protocol core, wherever the schema uses it (``pattern``, ``patternProperties`` and the two
keywords that consult it); a pattern RE2 cannot run is refused with the contract and, met in
a contract accepted earlier, is the contract's fault rather than a crash; RE2 agrees with
Python's ``re`` on the patterns both understand; and the keywords replaced for RE2 decide
what jsonschema's own decide.
"""

from __future__ import annotations

import inspect
import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from missionweave.protocol.artifacts import patterns, schemas
from missionweave.protocol.artifacts.outputs import parse_json_output, validate_against_schema
from missionweave.protocol.artifacts.patterns import (
    MAX_PROGRAM_SIZE,
    PatternRefused,
    check_pattern,
    search,
)
from missionweave.protocol.artifacts.schemas import (
    SchemaUnusable,
    schema_problems,
    validate_document,
)
from missionweave.protocol.errors import ErrorCode, ProtocolError

#: patterns that make a backtracking engine take time exponential in the text's length
CATASTROPHIC = ("^(a+)+$", "(a|aa)+$", "^(a|a)*b$", "^(\\w+\\s?)*$", "(x+x+)+y")
#: the bound issue 33 sets for one such pattern against a 100 KB output
BOUND_SECONDS = 0.050
HOSTILE = "a" * 100_000 + "!"


def _every_pattern_keyword(source: str) -> dict[str, Any]:
    """A schema that runs ``source`` through each keyword that consults a pattern."""
    return {
        "type": "object",
        "properties": {"text": {"type": "string", "pattern": source}},
        "patternProperties": {source: {"type": "integer"}},
        "additionalProperties": False,
        "allOf": [{"patternProperties": {source: True}}],
        "unevaluatedProperties": False,
    }


# --- linear time ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", CATASTROPHIC)
def test_a_catastrophic_pattern_checks_a_100_kb_output_in_well_under_50_ms(source: str) -> None:
    """Issue 33 §6: the whole check of a 100 KB output (a string value and a key, each run
    through every pattern keyword) costs < 50 ms, the pattern's compilation included."""
    document = json.dumps({"text": HOSTILE, HOSTILE: "not an integer"}).encode()
    patterns._compile.cache_clear()
    started = time.perf_counter()
    with pytest.raises(ProtocolError) as refused:
        validate_against_schema(
            parse_json_output(document, output="report"),
            _every_pattern_keyword(source),
            output="report",
        )
    elapsed = time.perf_counter() - started
    assert refused.value.code is ErrorCode.MALFORMED
    assert elapsed < BOUND_SECONDS, f"{source} took {elapsed * 1000:.1f} ms"


def test_a_pattern_is_compiled_once_for_every_string_it_checks() -> None:
    """Issue 33 §6: a thousand strings against one pattern compile it once."""
    patterns._compile.cache_clear()
    report = validate_document(["ab"] * 1000, {"items": {"pattern": "^[a-z]+$"}})
    assert report.valid
    info = patterns._compile.cache_info()
    assert (info.misses, info.hits) == (1, 999)


def test_the_protocol_core_runs_no_pattern_on_pythons_re() -> None:
    """Issue 33 §6: no keyword of the output validator that comes from jsonschema reaches
    ``re`` or the helpers that call it, directly or through jsonschema's own helpers."""
    validator = schemas._Validator
    for keyword, function in validator.VALIDATORS.items():
        if function.__module__.startswith("jsonschema"):
            assert not _reaches_re(function), keyword


def _reaches_re(function: Callable[..., Any], seen: set[str] | None = None) -> bool:
    seen = set() if seen is None else seen
    module = inspect.getmodule(function)
    for name in function.__code__.co_names:
        target = getattr(module, name, None)
        if target is re:
            return True
        if (
            inspect.isfunction(target)
            and target.__module__.startswith("jsonschema")
            and target.__qualname__ not in seen
        ):
            seen.add(target.__qualname__)
            if _reaches_re(target, seen):
                return True
    return False


# --- refused with the contract -------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param("(?=a)a", "invalid perl operator: (?=", id="lookahead"),
        pytest.param("(?<!a)b", "invalid perl operator: (?<!", id="lookbehind"),
        pytest.param("(a)\\1", "invalid escape sequence: \\1", id="backreference"),
        pytest.param("\\u00e9", "invalid escape sequence: \\u", id="ecma-unicode-escape"),
        pytest.param("a{1001}", "invalid repetition size: {1001}", id="repetition-over-1000"),
        pytest.param(
            "\\p{L}{20}",
            f"it compiles to 23924 RE2 instructions, more than {MAX_PROGRAM_SIZE}",
            id="program-too-large",
        ),
    ],
)
def test_a_pattern_re2_does_not_run_is_refused_saying_why(source: str, reason: str) -> None:
    """Issue 33 §6: the refusal names the pattern and RE2's reason."""
    with pytest.raises(PatternRefused) as refused:
        check_pattern(source)
    assert f"pattern {source!r} is refused: {reason}" in str(refused.value)


def test_every_pattern_of_a_schema_is_checked_where_the_meta_schema_has_one() -> None:
    """Issue 33 §6: nested patterns and pattern keys are checked; a ``const`` that looks like
    a schema is data and is not."""
    schema = {
        "$defs": {"d": {"pattern": "(?=x)"}},
        "items": {"patternProperties": {"(?<=x)": {}}},
        "const": {"pattern": "(?=x)"},
    }
    located = {location for location, _ in schema_problems(schema)}
    assert located == {("$defs", "d", "pattern"), ("items", "patternProperties")}


def test_a_pattern_refused_after_its_contract_was_accepted_is_the_contracts_fault() -> None:
    """A contract accepted before patterns were RE2's may hold a lookahead: the output check
    answers CONTRACT_INVALID naming the output (R13.2-03), never an unhandled error."""
    with pytest.raises(SchemaUnusable, match="invalid perl operator"):
        validate_document("draft", {"pattern": "^(?!draft)"})
    with pytest.raises(ProtocolError) as refused:
        validate_against_schema("draft", {"pattern": "^(?!draft)"}, output="report")
    assert refused.value.code is ErrorCode.CONTRACT_INVALID
    assert refused.value.details == {"output": "report"}


# --- the same answers as before, where RE2 and re agree -------------------------------------

_ATOMS = st.sampled_from(["a", "b", "0", "_", " ", ".", "[ab]", "[^a]", "[a-c0]", "\\d", "\\w"])
_ANCHORED = st.sampled_from(["", "^"]), st.sampled_from(["", "$"])
_QUANTIFIERS = st.sampled_from(["*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{0,2}", "{2,}"])


def _grouped(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``inner`` in a group (capturing or not), quantified."""
    openings = st.sampled_from(["(?:", "("])
    return st.tuples(openings, inner, _QUANTIFIERS).map(lambda t: f"{t[0]}{t[1]}){t[2]}")


_PATTERNS = st.recursive(
    st.one_of(_ATOMS, st.tuples(_ATOMS, _QUANTIFIERS).map("".join)),
    lambda inner: st.one_of(
        _grouped(inner),
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join).map("(?:{})".format),
    ),
    max_leaves=8,
)
_TEXTS = st.text(alphabet="ab0_ c", max_size=20)


@settings(max_examples=400, deadline=None)
@given(
    core=_PATTERNS,
    start=_ANCHORED[0],
    end=_ANCHORED[1],
    text=_TEXTS,
    boundary=st.booleans(),
)
def test_re2_and_python_re_agree_on_patterns_both_support(
    core: str, start: str, end: str, text: str, boundary: bool
) -> None:
    """Issue 33 §6: on ASCII text without line breaks, literals, ``.``, classes, ``\\d``,
    ``\\w``, ``\\b``, groups, alternation, greedy and lazy quantifiers and anchors match in
    RE2 exactly where they match in Python's ``re``."""
    source = start + ("\\b" if boundary else "") + core + end
    assert search(source, text) == (re.search(source, text) is not None), (source, text)


def test_dollar_matches_only_at_the_end_as_in_ecma_262_not_before_a_final_newline() -> None:
    """Where RE2 and Python differ, RE2 sides with ECMA-262: ``$`` is the end of the text."""
    assert re.search("^done$", "done\n") is not None
    assert not search("^done$", "done\n")
    assert search("^done$", "done")


_SAFE_SOURCES = st.sampled_from(["^a", "b$", "^[ab]+$", "_", "^a.c$", "0|1"])
_KEYS = st.text(alphabet="ab01_c", min_size=1, max_size=4)
_VALUES = st.one_of(st.integers(-2, 2), st.sampled_from(["a", "b0", ""]), st.booleans())


def _object_schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Object keywords nested through ``allOf``, ``if``/``then`` and a ``$ref`` to the root's
    ``$defs``, so ``unevaluatedProperties`` sees keys evaluated in place and by reference."""
    leaves = st.sampled_from(
        [True, False, {"type": "integer"}, {"type": "string", "pattern": "^[ab]"}]
    )

    def keywords(subschemas: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(
            {},
            optional={
                "properties": st.dictionaries(_KEYS, subschemas, max_size=2),
                "patternProperties": st.dictionaries(_SAFE_SOURCES, subschemas, max_size=2),
                "additionalProperties": subschemas,
                "unevaluatedProperties": subschemas,
            },
        )

    definition = keywords(leaves)
    in_place = st.recursive(
        st.one_of(keywords(leaves), st.just({"$ref": "#/$defs/d"})),
        lambda inner: st.one_of(
            st.tuples(keywords(leaves), st.lists(inner, min_size=1, max_size=2)).map(
                lambda pair: {**pair[0], "allOf": pair[1]}
            ),
            st.tuples(keywords(leaves), inner, inner).map(
                lambda triple: {**triple[0], "if": triple[1], "then": triple[2]}
            ),
        ),
        max_leaves=4,
    )
    return st.tuples(in_place, definition).map(lambda pair: {**pair[0], "$defs": {"d": pair[1]}})


@settings(max_examples=200, deadline=None)
@given(schema=_object_schemas(), document=st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_the_keywords_replaced_for_re2_decide_what_jsonschemas_own_decide(
    schema: dict[str, Any], document: dict[str, Any]
) -> None:
    """Issue 33 §6: on patterns both engines read alike, ``pattern``, ``patternProperties``,
    ``additionalProperties`` and ``unevaluatedProperties`` give jsonschema's errors, at the
    same paths, with the same messages."""
    ours = validate_document(document, schema)
    theirs = sorted(
        (
            {
                "path": schemas.format_path(tuple(error.absolute_path)),
                "message": schemas._short(error.message),
                "schema_path": schemas.format_path(tuple(error.absolute_schema_path)),
            }
            for error in Draft202012Validator(schema).iter_errors(document)
        ),
        key=lambda item: (item["path"], item["message"]),
    )
    assert list(ours.errors) == theirs[: schemas.MAX_SHOWN_ERRORS]
    assert ours.collected == len(theirs)
