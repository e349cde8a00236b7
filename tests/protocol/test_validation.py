"""Shared body checks (``missionweave/protocol/validation.py``), without a database."""

from __future__ import annotations

import re
import sys

import pytest

from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.validation import NOT_BLANK, check_text


def test_not_blank_matches_exactly_the_characters_strip_keeps() -> None:
    """Issue 33 §7: the pattern the OpenAPI document gives a name finds a character in a text
    exactly when ``check_text`` finds it not blank, over every code point."""
    pattern = re.compile(NOT_BLANK)
    disagreements = [
        hex(point)
        for point in range(sys.maxunicode + 1)
        if (pattern.search(chr(point)) is None) != (chr(point).strip() == "")
    ]
    assert disagreements == []


@pytest.mark.parametrize("value", [" ", "\u00a0", "\u3000 \t", "\x1f"])
def test_a_text_of_whitespace_alone_is_refused(value: str) -> None:
    with pytest.raises(ProtocolError, match="expected a non-empty string"):
        check_text(value, "$.name")
    assert re.search(NOT_BLANK, value) is None
