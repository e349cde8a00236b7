"""The breakdown's listing of one command's queries (``benchmarks/breakdown.py``)."""

from __future__ import annotations

from benchmarks.breakdown import _listed
from benchmarks.report import _query_count


def test_a_query_of_several_statements_is_listed_under_one_heading_and_counted_once():
    listed = [
        *_listed("BEGIN"),
        *_listed("SELECT 1 FROM a FOR UPDATE;\nSELECT 2 FROM b"),
        *_listed("INSERT INTO c VALUES (1);\nCOMMIT"),
    ]

    assert listed == [
        "BEGIN",
        "-- one query of 2 statements:",
        "  SELECT 1 FROM a FOR UPDATE",
        "  SELECT 2 FROM b",
        "-- one query of 2 statements:",
        "  INSERT INTO c VALUES (1)",
        "  COMMIT",
    ]
    assert _query_count(listed) == 3
