"""``Range`` and ``If-None-Match`` parsing (RFC 9110), without a server."""

from __future__ import annotations

import pytest

from apps.artifacts.ranges import ByteRange, Unsatisfiable, matches_etag, parse_range


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("bytes=0-9", ByteRange(0, 10)),
        ("bytes=5-", ByteRange(5, 100)),
        ("bytes=-10", ByteRange(90, 100)),
        ("bytes=-1000", ByteRange(0, 100)),
        ("bytes=90-1000", ByteRange(90, 100)),
        ("BYTES=1-1", ByteRange(1, 2)),
        ("bytes=0-" + "9" * 5000, ByteRange(0, 100)),  # huge numbers are not parsed slowly
        ("bytes=0-1,3-4", None),
        ("bytes=5-4", None),
        ("bytes=-", None),
        ("bytes=a-b", None),
        ("bytes=٣-", None),  # non-ASCII digits are not digits here
        ("lines=0-1", None),
        ("bytes 0-1", None),
    ],
)
def test_one_range_is_served_and_others_ignored(
    header: str | None, expected: ByteRange | None
) -> None:
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize(
    "header", ["bytes=100-", "bytes=100-200", "bytes=-0", "bytes=" + "9" * 40 + "-"]
)
def test_a_range_past_the_end_is_unsatisfiable(header: str) -> None:
    with pytest.raises(Unsatisfiable):
        parse_range(header, 100)


def test_nothing_of_an_empty_object_can_be_ranged() -> None:
    with pytest.raises(Unsatisfiable):
        parse_range("bytes=0-", 0)
    with pytest.raises(Unsatisfiable):
        parse_range("bytes=-5", 0)


def test_content_range_names_the_inclusive_end_and_the_size() -> None:
    assert ByteRange(5, 10).content_range(100) == "bytes 5-9/100"


def test_if_none_match_compares_weakly_and_accepts_a_star() -> None:
    etag = '"sha256:ab"'
    assert matches_etag('"sha256:ab"', etag)
    assert matches_etag('W/"sha256:ab"', etag)
    assert matches_etag('"x", "sha256:ab"', etag)
    assert matches_etag("*", etag)
    assert not matches_etag('"sha256:ac"', etag)
    assert not matches_etag(None, etag)
