"""Path converters: a path segment that cannot be an id names nothing (404), it never reaches
the database (a NUL byte in ``/groups/g%00/events`` once surfaced there as a 500)."""

from __future__ import annotations


class WireIdConverter:
    """wire.md §1 client-chosen ids: 1..128 characters of ``[A-Za-z0-9._:-]``."""

    regex = r"[A-Za-z0-9._:-]{1,128}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class PrincipalConverter(WireIdConverter):
    """wire.md §2 principals: ``agent:<id>`` or ``user:<username>`` (Django usernames)."""

    regex = r"(?:agent|user):[A-Za-z0-9._@+:-]{1,150}"


class DigestConverter(WireIdConverter):
    """wire.md §1 digests: ``sha256:`` and 64 lowercase hex digits."""

    regex = r"sha256:[0-9a-f]{64}"


class CountConverter:
    """A sequence or a version in a path: 1 to 18 ASCII digits (``answers.MAX_COUNT_DIGITS``,
    as the query counts), so a longer one names nothing (404) instead of overflowing bigint."""

    regex = r"[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
