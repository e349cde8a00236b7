"""The JSONPath subset deterministic checks use to point into an output (R13.2-03)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.artifacts.jsonpath import (
    MAX_STEPS,
    JsonPathError,
    Location,
    format_path,
    parse_path,
    resolve,
)


@pytest.mark.parametrize(
    ("text", "location"),
    [
        pytest.param("$", (), id="root"),
        pytest.param("$.a.b[0]", ("a", "b", 0), id="names-and-index"),
        pytest.param("$['odd key']", ("odd key",), id="single-quoted"),
        pytest.param('$["odd key"]', ("odd key",), id="double-quoted"),
        pytest.param("$['it\\'s']", ("it's",), id="single-quote-escape"),
        pytest.param("$['a\\\\b']", ("a\\b",), id="backslash-escape"),
        pytest.param('$["\\u00e9"]', ("é",), id="json-escape"),
        pytest.param("$['0']", ("0",), id="quoted-digit-is-a-key"),
        pytest.param("$[10]", (10,), id="two-digit-index"),
        pytest.param("$['']", ("",), id="empty-key"),
        pytest.param("$['a]b'].c", ("a]b", "c"), id="bracket-inside-key"),
    ],
)
def test_paths_of_the_subset_parse_to_their_steps(text: str, location: Location) -> None:
    """R13.2-03: ``$``, ``.name``, ``['name']``, ``["name"]`` and ``[index]``."""
    assert parse_path(text) == location


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("a.b", id="no-root"),
        pytest.param("$.", id="dot-without-name"),
        pytest.param("$.1a", id="name-starts-with-digit"),
        pytest.param("$.a-b", id="dash-in-plain-name"),
        pytest.param("$[01]", id="leading-zero"),
        pytest.param("$[-1]", id="negative-index"),
        pytest.param("$[*]", id="wildcard"),
        pytest.param("$..a", id="recursive-descent"),
        pytest.param("$[0:2]", id="slice"),
        pytest.param("$['a'", id="unclosed-bracket"),
        pytest.param("$['a]", id="unterminated-string"),
        pytest.param("$['\\n']", id="unknown-single-quote-escape"),
        pytest.param('$["\\x"]', id="bad-json-escape"),
        pytest.param("$ .a", id="whitespace"),
        pytest.param("$[99999999999999999]", id="index-beyond-2-53"),
        pytest.param("$" + ".a" * (MAX_STEPS + 1), id="too-many-steps"),
        pytest.param(5, id="not-a-string"),
    ],
)
def test_anything_else_is_refused(text: object) -> None:
    """R13.2-03: a path outside the subset is refused (at contract validation), never guessed."""
    with pytest.raises(JsonPathError):
        parse_path(text)


def test_format_writes_plain_names_with_a_dot_and_others_as_json_strings() -> None:
    """R13.2-03: the canonical form is the contract validator's own error-path form."""
    assert format_path(("items", 2, "title")) == "$.items[2].title"
    assert format_path(("odd key", "0", 0)) == '$["odd key"]["0"][0]'
    assert format_path(("b",), "$.a") == "$.a.b"


def test_resolve_steps_by_name_into_objects_and_by_index_into_lists_only() -> None:
    """R13.2-03: ``[0]`` never reads the key "0", and a missing step is absent, not an error."""
    document: Any = {"a": [{"b": 1}], "0": "zero"}
    assert resolve(document, ("a", 0, "b")) == (True, 1)
    assert resolve(document, (0,)) == (False, None)
    assert resolve(document, ("0",)) == (True, "zero")
    assert resolve(document, ("a", 1)) == (False, None)
    assert resolve(document, ("a", "0")) == (False, None)
    assert resolve(None, ()) == (True, None)


STEPS = st.lists(st.text(max_size=6) | st.integers(min_value=0, max_value=10**6), max_size=8)


@settings(max_examples=500)
@given(location=STEPS)
def test_format_and_parse_round_trip(location: list[str | int]) -> None:
    """R13.2-03: every location has a text that parses back to exactly it."""
    assert parse_path(format_path(tuple(location))) == tuple(location)


@settings(max_examples=1000)
@given(text=st.text(alphabet="$.[]'\"\\ab0123-* ", max_size=24) | st.text(max_size=24))
def test_parsing_any_text_gives_a_location_or_a_refusal(text: str) -> None:
    """R13.2-03: any text is a location of the subset or a JsonPathError, never another
    exception; what parses, formats to a canonical text that parses to the same steps."""
    try:
        location = parse_path(text)
    except JsonPathError:
        return
    assert parse_path(format_path(location)) == location
