"""``Range`` and ``If-None-Match`` for ``GET /api/v1/artifacts/{digest}`` (RFC 9110 §13-14).

One range is served (206); a header this server does not serve — another unit, several
ranges, a malformed one — is ignored and the whole object is sent (RFC 9110 §14.2 allows
that). A well-formed range that starts past the end is :class:`Unsatisfiable` (416).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SINGLE = re.compile(r"bytes=([0-9]*)-([0-9]*)", re.IGNORECASE)
#: positions longer than this are past any object (and ``int()`` of a huge string is slow)
_MAX_DIGITS = 18
_PAST_ANY_OBJECT = 10**_MAX_DIGITS


class Unsatisfiable(Exception):
    """The range selects no byte of the object."""


@dataclass(frozen=True, slots=True)
class ByteRange:
    start: int
    stop: int  # exclusive

    @property
    def length(self) -> int:
        return self.stop - self.start

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.stop - 1}/{size}"


def _position(digits: str) -> int:
    return _PAST_ANY_OBJECT if len(digits) > _MAX_DIGITS else int(digits)


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one range ``header`` asks for in an object of ``size`` bytes, or ``None`` for
    the whole object."""
    if header is None:
        return None
    match = _SINGLE.fullmatch(header.strip())
    if match is None:
        return None
    first, last = match.groups()
    if not first:
        if not last:
            return None
        suffix = _position(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable
        return ByteRange(max(0, size - suffix), size)
    start = _position(first)
    end = _position(last) if last else _PAST_ANY_OBJECT
    if end < start:
        return None  # invalid: ignored, like any malformed range
    if start >= size:
        raise Unsatisfiable
    return ByteRange(start, min(end, size - 1) + 1)


def matches_etag(header: str | None, etag: str) -> bool:
    """``If-None-Match`` names ``etag`` (weakly: ``W/`` is ignored) or is ``*``."""
    if header is None:
        return False
    candidates = {candidate.strip().removeprefix("W/") for candidate in header.split(",")}
    return "*" in candidates or etag in candidates
