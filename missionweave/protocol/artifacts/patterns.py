"""The regular expressions a contract carries, run on RE2: time linear in the text.

A contract's inline schemas (``pattern``, ``patternProperties``) hold regular expressions
written by whoever writes the contract, and the authority runs them on a submitted output
while it holds the group's lock (R13.2-03 step 1, wire.md §10). Python's ``re`` backtracks:
``^(a+)+$`` against 24 ``a`` and a ``!`` takes half a second here and each further ``a``
doubles it, so a 100 KB output would never be answered, and every other command of the group
waits behind it. RE2 compiles a pattern
to an automaton and never backtracks: a search costs at most time proportional to the
program's size times the text's length, so :data:`MAX_PROGRAM_SIZE` bounds the first factor
and the output size limit the second.

Syntax is RE2's (https://github.com/google/re2/wiki/Syntax). JSON Schema names ECMA-262;
the two share literals, ``.``, classes, ``\\d \\w \\s \\b``, groups, alternation, greedy and
lazy quantifiers and ``^``/``$`` (which, as in ECMA-262 and unlike Python, match only at the
ends of the text). Refused, when the contract is validated (``CONTRACT_INVALID``):
lookahead and lookbehind, backreferences, ECMA-only escapes (``\\uXXXX``, ``\\cX``; RE2
writes ``\\x{XXXX}``), a counted repetition over 1000, and a program over
:data:`MAX_PROGRAM_SIZE` instructions.

Compiled once per distinct pattern (a bounded cache): an output is checked against the same
few patterns string after string.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

#: RE2 instructions a pattern may compile to. A search's worst case is proportional to this
#: times the text's length (the automaton tracks at most one thread per instruction). The
#: limit admits a length written as a pattern (``^[^<>]{0,1000}$`` is 10,002) and refuses
#: what counted repetitions of a wide class expand to (``\p{L}{20}`` is 23,924).
MAX_PROGRAM_SIZE = 12_000
#: distinct patterns kept compiled per process (the RE2 binding keeps as many of its own)
CACHED_PATTERNS = 256
#: how much of a refused pattern its refusal quotes
_SHOWN = 80

_OPTIONS = re2.Options()
# Only "does it match?" is asked: no capture groups means no second pass for submatches.
_OPTIONS.never_capture = True
# A refused pattern is an answer to the contract's writer, not a line in the server's log.
_OPTIONS.log_errors = False


class PatternRefused(ValueError):
    """A pattern RE2 does not run; the message says which pattern and why, for a person."""


def check_pattern(source: str) -> None:
    """Raise :class:`PatternRefused` unless ``source`` is a pattern the authority runs."""
    _compiled(source)


def search(source: str, text: str) -> bool:
    """Whether ``source`` matches anywhere in ``text`` (JSON Schema's ``pattern`` is not
    anchored), in time linear in ``len(text)``; :class:`PatternRefused` for a bad pattern."""
    return _compiled(source).search(text) is not None


def _compiled(source: str) -> Any:
    compiled = _compile(source)
    if isinstance(compiled, str):
        raise PatternRefused(compiled)
    return compiled


@lru_cache(maxsize=CACHED_PATTERNS)
def _compile(source: str) -> Any:
    """The compiled pattern, or why it is refused (a refusal is cached like a success)."""
    try:
        compiled = re2.compile(source, _OPTIONS)
    except re2.error as exc:
        return (
            f"pattern {_shown(source)} is refused: {_reason(exc)} (patterns are RE2 syntax: "
            "no lookahead, lookbehind or backreferences)"
        )
    size = compiled.programsize
    if size > MAX_PROGRAM_SIZE:
        return (
            f"pattern {_shown(source)} is refused: it compiles to {size} RE2 instructions, "
            f"more than {MAX_PROGRAM_SIZE} (a length is minLength and maxLength)"
        )
    return compiled


def _reason(error: Exception) -> str:
    detail = error.args[0] if error.args else ""
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    return str(detail) or "RE2 cannot compile it"


def _shown(source: str) -> str:
    return repr(source if len(source) <= _SHOWN else source[: _SHOWN - 1] + "…")
