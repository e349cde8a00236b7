"""RFC 8785 canonical bytes and ``sha256:`` digests (wire.md §1)."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol import strictjson
from missionweave.protocol.canonical import (
    ZERO_HASH,
    canonical_bytes,
    digest,
    is_digest,
    sha256_digest,
    without,
)


def test_rfc8785_section_3_2_4_example_is_reproduced_byte_for_byte() -> None:
    """wire§1: the canonical form is RFC 8785 (its §3.2.4 sample input and output)."""
    source = (
        b'{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        b'  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        b'  "literals": [null, true, false]}'
    )
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    ).encode()
    assert canonical_bytes(strictjson.parse(source)) == expected


def test_keys_are_sorted_by_utf16_code_units_not_code_points() -> None:
    """wire§1 / RFC 8785 §3.2.3: an astral character (surrogate D83D) sorts before U+FB33."""
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    text = canonical_bytes(value).decode("utf-8")
    order = [text.index(f'"{key}"' if key != "\r" else '"\\r"') for key in value]
    keys_in_output = [key for _, key in sorted(zip(order, value, strict=True))]
    assert keys_in_output == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("1e21", "1e+21"),
        ("1E-7", "1e-7"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("1e20", "100000000000000000000"),
        ("4.50", "4.5"),
        ("2e-3", "0.002"),
        ("0.000001", "0.000001"),
        ("1e-27", "1e-27"),
        ("5e-324", "5e-324"),
        ("-5e-324", "-5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("9.999999999999997e22", "9.999999999999997e+22"),
        ("1e23", "1e+23"),
        ("9007199254740991", "9007199254740991"),
        ("333333333.33333329", "333333333.3333333"),
    ],
)
def test_numbers_are_written_in_their_ecmascript_form(literal: str, expected: str) -> None:
    """wire§1 / RFC 8785 §3.2.2.3: numbers serialise like ECMAScript's Number.toString."""
    assert canonical_bytes(json.loads(literal)) == expected.encode()


def test_strings_escape_only_what_rfc8785_escapes() -> None:
    """wire§1: controls as lowercase \\u00xx or \\b\\f\\n\\r\\t; everything else raw."""
    value = '\x00\x1f\b\f\n\r\t"\\/é€\U0001f600\u2028'
    assert canonical_bytes(value) == (
        '"\\u0000\\u001f\\b\\f\\n\\r\\t\\"\\\\/é€\U0001f600\u2028"'.encode()
    )


def test_canonical_form_has_no_whitespace_and_ignores_input_key_order() -> None:
    """wire§1: two spellings of the same value have the same canonical bytes."""
    first = strictjson.parse(b'{ "b" : [1, 2.0, {"y": null, "x": true}], "a": "z" }')
    second = strictjson.parse(b'{"a":"z","b":[1,2,{"x":true,"y":null}]}')
    assert canonical_bytes(first) == canonical_bytes(second)
    assert canonical_bytes(first) == b'{"a":"z","b":[1,2,{"x":true,"y":null}]}'


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 2**53, -(2**53)])
def test_values_jcs_cannot_represent_are_refused(value: float) -> None:
    """wire§1: NaN, infinities and integers beyond 2**53-1 have no canonical form."""
    with pytest.raises(ValueError):
        canonical_bytes(value)


def test_digest_is_sha256_prefix_and_64_lowercase_hex_of_canonical_bytes() -> None:
    """wire§1: digests are written ``sha256:<64 lowercase hex>`` over the canonical bytes."""
    value = {"b": 1, "a": [True, None]}
    expected = "sha256:" + hashlib.sha256(b'{"a":[true,null],"b":1}').hexdigest()
    assert digest(value) == expected
    assert sha256_digest(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert is_digest(expected)
    assert is_digest(ZERO_HASH)
    assert ZERO_HASH == "sha256:" + "0" * 64


@pytest.mark.parametrize(
    "text",
    [
        "sha256:" + "A" * 64,
        "sha256:" + "0" * 63,
        "sha256:" + "0" * 65,
        "sha512:" + "0" * 64,
        "SHA256:" + "0" * 64,
        "sha256:" + "g" * 64,
        "0" * 71,
        None,
        71,
    ],
)
def test_is_digest_refuses_other_spellings(text: object) -> None:
    """wire§1: only ``sha256:`` and lowercase hex count as a digest."""
    assert not is_digest(text)


def test_without_removes_only_the_named_keys_and_leaves_the_original_alone() -> None:
    """wire§3/§6: what a signature or hash covers is the document minus the named keys."""
    document = {"a": 1, "signature": "x", "hash": "y"}
    assert without(document, "signature") == {"a": 1, "hash": "y"}
    assert document == {"a": 1, "signature": "x", "hash": "y"}


# --- the encoder fast path is the package, byte for byte (issue 15 §1) -------------------------

_names = st.one_of(
    st.text(max_size=6),
    st.text(alphabet=st.characters(min_codepoint=0xE000, max_codepoint=0x1F64F), max_size=3),
    st.sampled_from(["", "a", "\ufb33", "\U0001f600", "\u20ac", "\x00", '"', "\\"]),
)
_floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([5.0, -0.0, 1e-4, 9.99e-5, 1e16, 9999999999999998.0, 1e21, 1e-7, 0.1]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) - 2, max_value=2**53 + 2),
    _floats,
    st.text(),  # lone surrogates included: both refuse them
)
_json_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_names, inner, max_size=4),
    ),
    max_leaves=20,
)


def _package_or_refusal(value: object) -> bytes | type[Exception]:
    try:
        return rfc8785.dumps(value)
    except ValueError as refusal:  # the package's errors, or a surrogate name's codec error
        return type(refusal)


def _ours_or_refusal(value: object) -> bytes | type[Exception]:
    try:
        return canonical_bytes(value)
    except ValueError as refusal:
        return type(refusal)


@settings(max_examples=3000, deadline=None)
@given(_json_values)
def test_canonical_bytes_equal_the_rfc8785_package_for_any_json_value(value: object) -> None:
    """wire.md §1: the C-encoder fast path writes exactly the package's bytes, and refuses
    exactly what it refuses (big integers, non-finite numbers, lone surrogates), for names
    beyond the BMP, floats on both sides of the positional band, whole floats and nesting."""
    assert _ours_or_refusal(value) == _package_or_refusal(value)


@pytest.mark.parametrize(
    "value",
    [{1: "x"}, {"a": {2: 3}}, [object()], {"a": 1.5j}, {"n": 2**60}, ["\ud800"], {"a": [1e400]}],
)
def test_values_only_the_package_judges_are_refused_as_the_package_refuses(
    value: object,
) -> None:
    """Non-string names, non-JSON types, unsafe integers and lone surrogates reach the
    package, which refuses them with its own error."""
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps(value)
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_bytes(value)
