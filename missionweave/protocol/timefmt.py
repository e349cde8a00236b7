"""RFC 3339 UTC timestamps ending in ``Z`` (wire.md §1)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# ASCII digits only (``\d`` alone takes "٢٠٢٦" too) and ``\Z`` (``$`` lets a trailing newline in)
_RFC3339_Z = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z\Z", re.ASCII
)


def parse_timestamp(text: object) -> datetime:
    """Parse an RFC 3339 UTC timestamp ending in ``Z``; ``ValueError`` otherwise."""
    if not isinstance(text, str):
        raise ValueError("a timestamp is a string")
    match = _RFC3339_Z.match(text)
    if not match:
        raise ValueError("not an RFC 3339 UTC timestamp ending in Z")
    year, month, day, hour, minute, second, fraction = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    return datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=UTC
    )


def format_timestamp(moment: datetime) -> str:
    """The authority's one way of writing a time: microseconds, always, and ``Z``.

    A fixed form matters: ``recorded_at`` is inside every event hash.
    """
    moment = moment.astimezone(UTC)
    # the year by hand: strftime's %Y drops the zero padding below 1000 ("1-01-01T…"), which
    # the parser above (four digits) would then refuse to read back
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.%fZ")
