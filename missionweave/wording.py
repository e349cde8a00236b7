"""Counts and lists as people write them: "1 artifact", "2 artifacts", "a, b and c".

Sentences shown to people (pages, emails, the authority's own evidence summaries) used to
say "1 artifact(s) intact" and "corrupted: ['sha256:…']": a programmer's plural and a
Python list. Pure functions, importable from every layer.
"""

from __future__ import annotations

from collections.abc import Iterable


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun`` agreed: ``counted(1, "group")`` is "1 group", 2 "2 groups"."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def listed(items: Iterable[object], *, empty: str = "none") -> str:
    """Items joined as a sentence lists them: "a", "a and b", "a, b and c"."""
    words = [str(item) for item in items]
    if not words:
        return empty
    if len(words) == 1:
        return words[0]
    return f"{', '.join(words[:-1])} and {words[-1]}"
