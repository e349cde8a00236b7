"""Strict JSON parsing (wire.md §1): what is refused, and that nothing else escapes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol import strictjson
from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.errors import ErrorCode, ProtocolError


def _refused(data: bytes | str, **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        strictjson.parse(data, **kwargs)
    return caught.value


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("duplicate key", b'{"a": 1, "a": 1}'),
        ("nested duplicate key", b'{"x": [{"k": 1, "k": 2}]}'),
        ("NaN", b'{"a": NaN}'),
        ("Infinity", b"[Infinity]"),
        ("-Infinity", b"-Infinity"),
        ("1e400", b'{"n": 1e400}'),
        ("-1e400", b"-1e400"),
        ("2**53", b"9007199254740992"),
        ("-(2**53)", b"-9007199254740992"),
        ("20-digit integer", b"12345678901234567890"),
        ("2**53 as a double", b"9007199254740992.0"),
        ("2**53 with an exponent", b"9.007199254740992e15"),
        ("1e20", b"1e20"),
        ("-9.99e20", b"-9.99e20"),
        ("5000-digit integer", b"1" * 5000),
        ("depth 33", _nested(33)),
        ("depth 33 in objects", b'{"a":' * 33 + b"1" + b"}" * 33),
        ("depth 100000", _nested(100_000)),
        ("invalid UTF-8", b'{"a": "\xff"}'),
        ("truncated UTF-8", b'"\xe2\x82"'),
        ("overlong UTF-8", b'"\xc0\xaf"'),
        ("lone high surrogate", b'"\\ud800"'),
        ("lone low surrogate", b'{"k": "\\udc00"}'),
        ("surrogate in a key", b'{"\\ud800": 1}'),
        ("trailing garbage", b'{"a": 1} x'),
        ("two documents", b"{} {}"),
        ("empty", b""),
        ("whitespace only", b"   "),
        ("single quotes", b"{'a': 1}"),
        ("trailing comma", b"[1, 2,]"),
        ("comment", b"[1] // no"),
        ("leading zero", b"[01]"),
        ("hex", b"0x10"),
        ("bare word", b"undefined"),
        ("BOM", b"\xef\xbb\xbf{}"),
        ("unescaped control character", b'"a\x01b"'),
        ("escaped NUL", b'"a\\u0000b"'),
        ("escaped NUL in a key", b'{"k\\u0000": 1}'),
        ("escaped NUL deep inside", b'[{"a": ["ok", "\\u0000"]}]'),
        ("raw NUL", b'"a\x00b"'),
    ],
)
def test_refused_input_is_malformed_citing_wire_1(name: str, data: bytes) -> None:
    """wire§1: every strictness rule refuses with MALFORMED and requirement wire§1."""
    error = _refused(data)
    assert error.code is ErrorCode.MALFORMED, name
    assert error.requirement == "wire§1"
    assert error.status == 400


def test_lone_surrogate_in_python_text_is_malformed() -> None:
    """wire§1: text that cannot be UTF-8 (a lone surrogate code point) is MALFORMED."""
    error = _refused('"\ud800"')
    assert (error.code, error.requirement) == (ErrorCode.MALFORMED, "wire§1")


def test_depth_32_is_accepted_and_33_refused() -> None:
    """wire§1: nesting deeper than 32 is MALFORMED; 32 itself is fine."""
    assert strictjson.nesting_depth(strictjson.parse(_nested(32))) == 32
    mixed = b'{"a":[' * 16 + b"0" + b"]}" * 16
    assert strictjson.nesting_depth(strictjson.parse(mixed)) == 32
    assert _refused(_nested(33)).code is ErrorCode.MALFORMED
    assert _refused(b'{"a":[' * 16 + b"[0]" + b"]}" * 16).code is ErrorCode.MALFORMED


def test_largest_safe_integers_and_double_extremes_are_accepted() -> None:
    """wire§1: ±(2**53-1) and the finite double range are valid numbers."""
    assert strictjson.parse(b"9007199254740991") == 2**53 - 1
    assert strictjson.parse(b"-9007199254740991") == -(2**53 - 1)
    assert strictjson.parse(b"1.7976931348623157e308") == 1.7976931348623157e308
    assert strictjson.parse(b"1e-400") == 0.0  # underflow is a finite double
    assert strictjson.parse(b"-0") == 0
    assert strictjson.parse(b"9007199254740991.0") == 2**53 - 1
    assert strictjson.parse(b"1e21") == 1e21  # canonical 1e+21 parses back as a double
    assert strictjson.parse(b"1.5e300") == 1.5e300


def test_oversized_body_is_too_large_before_it_is_parsed() -> None:
    """wire§1: a body over the size limit is TOO_LARGE (413), whatever it contains."""
    error = _refused(b"[" + b"1," * 600 + b"1]", max_bytes=1000)
    assert error.code is ErrorCode.TOO_LARGE
    assert error.status == 413
    assert error.requirement == "wire§1"
    assert error.details == {"limit": 1000}
    assert _refused(b"\xff" * 1001, max_bytes=1000).code is ErrorCode.TOO_LARGE
    assert strictjson.parse(b" " * 990 + b"[1]", max_bytes=1000) == [1]


def test_an_escaped_backslash_before_u0000_is_not_a_nul() -> None:
    """wire§1: only the character U+0000 is refused, not the six characters "\\u0000"."""
    assert strictjson.parse(b'"\\\\u0000"') == "\\u0000"


def test_text_and_bytes_parse_alike() -> None:
    """wire§1: a request is UTF-8; str input is treated as its UTF-8 encoding."""
    assert strictjson.parse('{"é": "€"}') == strictjson.parse('{"é": "€"}'.encode()) == {"é": "€"}


# --- properties ---------------------------------------------------------------------------

_SAFE = 2**53 - 1


def _within_limits(value: float) -> bool:
    """Doubles the strict parser accepts: integral values beyond 2**53-1 are refused however
    they are written, because RFC 8785 writes those below 1e21 as integer literals."""
    return not (value.is_integer() and _SAFE < abs(value) < 1e21)


# U+0000 is refused on purpose (no PostgreSQL text or jsonb column can hold it).
_alphabet = st.characters(codec="utf-8", exclude_characters="\x00")
_texts = st.text(alphabet=_alphabet)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-_SAFE, max_value=_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False).filter(_within_limits)
    | _texts
)
json_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(_alphabet, max_size=8), children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300)
@given(json_values)
def test_any_json_value_within_limits_round_trips(value: Any) -> None:
    """wire§1: whatever a conforming client sends within the limits parses to the same value."""
    if strictjson.nesting_depth(value) > strictjson.MAX_DEPTH:
        return
    canonical = canonical_bytes(value)
    assert strictjson.parse(canonical) == value
    assert canonical_bytes(strictjson.parse(canonical)) == canonical
    spelled = json.dumps(value, ensure_ascii=True, indent=1).encode()
    assert canonical_bytes(strictjson.parse(spelled)) == canonical


def _only_protocol_errors(data: bytes | str) -> None:
    try:
        value = strictjson.parse(data, max_bytes=4096)
    except ProtocolError as error:
        refusal = error
    else:
        refusal = None
    if refusal is not None:
        assert refusal.code in (ErrorCode.MALFORMED, ErrorCode.TOO_LARGE)
        assert refusal.requirement == "wire§1"
        return
    # Whatever is accepted is canonicalisable, finite and within the depth limit.
    canonical_bytes(value)
    assert strictjson.nesting_depth(value) <= strictjson.MAX_DEPTH
    if isinstance(value, float):
        assert math.isfinite(value)


@settings(max_examples=400)
@given(st.binary(max_size=300))
def test_parse_raises_only_protocol_errors_on_arbitrary_bytes(data: bytes) -> None:
    """wire§1/§8: no input, however malformed, raises anything but a ProtocolError."""
    _only_protocol_errors(data)


_json_ish = st.text(
    alphabet=st.sampled_from(list('{}[]",:-+.0123456789eEtruefalsnNIyInfity \\u\ud800\x00é')),
    max_size=200,
)


@settings(max_examples=400)
@given(st.text(alphabet=st.characters(codec=None), max_size=200) | _json_ish)
def test_parse_raises_only_protocol_errors_on_arbitrary_text(data: str) -> None:
    """wire§1/§8: lone surrogates, control characters or JSON shards are refused cleanly."""
    _only_protocol_errors(data)


_escaped_strings = st.lists(
    st.one_of(
        st.sampled_from(
            ["\\ud800", "\\uDBFF", "\\udc00", "\\uDFFF", "\\ud83d\\ude00", "\\\\ud800"]
        ),
        st.sampled_from(["\\u0041", "\\n", "a", "é", "\\\\", "\\u00e9"]),
    ),
    max_size=6,
).map(lambda parts: '{"k' + "".join(parts[:2]) + '": "' + "".join(parts) + '"}')


@settings(max_examples=400)
@given(_escaped_strings)
def test_whatever_is_accepted_can_be_canonicalised(text: str) -> None:
    """wire§1: a lone surrogate escape, in a key or a value, is refused; a surrogate pair or
    an escaped backslash before ``u`` is not one. Everything accepted canonicalises, though
    parse only canonicalises when the text holds a surrogate escape."""
    try:
        canonical_bytes(json.loads(text))
    except (ValueError, UnicodeError):
        with pytest.raises(ProtocolError) as refused:
            strictjson.parse(text)
        assert refused.value.code is ErrorCode.MALFORMED
    else:
        canonical_bytes(strictjson.parse(text))
