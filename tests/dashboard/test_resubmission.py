"""What changed between two submissions, output by output (issue 37 §6; R13.2-03: a
resubmission is judged afresh, and the reviewer is shown where to look).

Pure: ``apps.dashboard.resubmission`` compares what ``resubmission_reads`` read; no database.
"""

from __future__ import annotations

import json

from apps.dashboard import preview_formats as formats
from apps.dashboard import resubmission as rs
from missionweave.protocol.canonical import sha256_digest


def side(data: bytes, media_type: str = "text/markdown") -> rs.Side:
    return rs.Side(sha256_digest(data), media_type, len(data), data=data)


def test_the_same_digest_is_unchanged_and_shows_no_diff() -> None:
    same = side(b"# Summary\n")
    change = rs.compare("summary", same, same)
    assert change.status == rs.UNCHANGED
    assert not change.changed
    assert change.text_diff is None
    assert change.json_diff is None


def test_a_changed_text_output_shows_the_lines_added_and_removed() -> None:
    before = side(b"# Summary\n\nTen incidents.\nAll minor.\n")
    after = side(b"# Summary\n\nEleven incidents.\nAll minor.\nOne was major.\n")
    change = rs.compare("summary", before, after)
    assert change.status == rs.CHANGED
    assert change.compared_as == rs.TEXT
    diff = change.text_diff
    assert diff is not None
    assert (diff.added, diff.removed) == (2, 1)
    lines = [(line.kind, line.text) for line in diff.lines if line.kind != "context"]
    assert ("removed", "Ten incidents.") in lines
    assert ("added", "Eleven incidents.") in lines
    assert ("added", "One was major.") in lines
    assert diff.more_lines == 0


def test_a_long_text_diff_is_cut_and_says_how_much_was_left_out() -> None:
    """Bounded: at most ``DIFF_SHOWN`` lines of a diff are kept; the rest are counted."""
    count = formats.DIFF_SHOWN + 200
    before = side("".join(f"line {i}\n" for i in range(count)).encode(), "text/plain")
    after = side("".join(f"LINE {i}\n" for i in range(count)).encode(), "text/plain")
    diff = rs.compare("log", before, after).text_diff
    assert diff is not None
    assert len(diff.lines) == formats.DIFF_SHOWN
    assert diff.more_lines > 0
    assert diff.added == count
    assert diff.removed == count


def test_text_too_long_to_compare_says_why_instead_of_diffing() -> None:
    lines = formats.DIFF_LINES + 1
    before = side(b"a\n" * lines, "text/plain")
    after = side(b"b\n" * lines, "text/plain")
    change = rs.compare("log", before, after)
    assert change.status == rs.CHANGED
    assert change.text_diff is None
    assert "too long to compare" in change.not_compared


def test_a_side_not_read_is_not_compared_and_says_why() -> None:
    """A side over the comparison limit (or corrupted, or not stored) is never diffed."""
    before = side(b"old", "text/plain")
    after = rs.Side(sha256_digest(b"new"), "text/plain", 900_000, why_not="over 256 KiB")
    change = rs.compare("log", before, after)
    assert change.status == rs.CHANGED
    assert change.text_diff is None
    assert change.not_compared == "over 256 KiB"


def test_a_changed_json_output_is_listed_by_path() -> None:
    before = {
        "findings": ["disk full", "slow backup", "expired certificate"],
        "severity": "low",
        "owner": {"team": "ops", "pager": "alice"},
        "notes": "draft",
    }
    after = {
        "findings": ["disk full", "slow backup", "expired TLS certificate"],
        "severity": "high",
        "owner": {"team": "ops", "pager": "bob", "backup": "carol"},
        "summary with spaces": 3,
    }
    change = rs.compare(
        "report",
        side(json.dumps(before).encode(), "application/json"),
        side(json.dumps(after).encode(), "application/json"),
    )
    assert change.compared_as == rs.JSON
    diff = change.json_diff
    assert diff is not None
    found = {(c.path, c.kind, c.before, c.after) for c in diff.changes}
    assert found == {
        ("$.findings[2]", "changed", '"expired certificate"', '"expired TLS certificate"'),
        ("$.severity", "changed", '"low"', '"high"'),
        ("$.owner.pager", "changed", '"alice"', '"bob"'),
        ("$.owner.backup", "added", "", '"carol"'),
        ("$.notes", "removed", '"draft"', ""),
        ('$["summary with spaces"]', "added", "", "3"),
    }
    assert diff.total == 6


def test_an_item_inserted_into_a_json_list_is_one_addition_not_every_index_changed() -> None:
    old = rs.json_diff({"items": [1, 2, 3, 4]}, {"items": [0, 1, 2, 3, 4]})
    assert [(c.path, c.kind, c.after) for c in old.changes] == [("$.items[0]", "added", "0")]
    removed = rs.json_diff([{"id": 1}, {"id": 2}], [{"id": 2}])
    assert [(c.path, c.kind) for c in removed.changes] == [("$[0]", "removed")]


def test_a_number_that_becomes_a_string_or_a_bool_is_a_change() -> None:
    diff = rs.json_diff({"a": 1, "b": 1}, {"a": "1", "b": True})
    assert {c.path for c in diff.changes} == {"$.a", "$.b"}


def test_json_reformatted_only_has_no_changes() -> None:
    change = rs.compare(
        "report",
        side(b'{"a": 1, "b": [1, 2]}', "application/json"),
        side(b'{\n  "b": [1, 2],\n  "a": 1\n}\n', "application/json"),
    )
    assert change.status == rs.CHANGED
    assert change.json_diff is not None
    assert change.json_diff.total == 0


def test_a_json_diff_is_cut_at_its_limit_and_counts_the_rest() -> None:
    before = {f"k{i}": i for i in range(50)}
    after = {f"k{i}": i + 1 for i in range(50)}
    diff = rs.json_diff(before, after, limit=10)
    assert len(diff.changes) == 10
    assert diff.more == 40
    assert diff.total == 50


def test_a_long_json_value_is_shortened() -> None:
    diff = rs.json_diff({"a": "x" * 1000}, {"a": "y"})
    assert len(diff.changes[0].before) == rs.JSON_VALUE_CHARS
    assert diff.changes[0].before.endswith("…")


def test_invalid_json_on_a_side_is_compared_as_text() -> None:
    change = rs.compare(
        "report",
        side(b'{"a": 1}', "application/json"),
        side(b'{"a": 1,', "application/json"),
    )
    assert change.compared_as == rs.TEXT
    assert change.text_diff is not None


def test_unnamed_types_are_sniffed_like_the_preview() -> None:
    assert rs.content_kind("", '{"a": 1}') == rs.JSON
    assert rs.content_kind("application/octet-stream", "plain words") == rs.TEXT
    assert rs.content_kind("application/vnd.api+json", "[]") == rs.JSON
    assert rs.content_kind("image/png", "") == rs.BINARY
    assert rs.content_kind("text/plain", None) == rs.BINARY


def test_binary_outputs_only_say_the_bytes_differ() -> None:
    before = side(b"\x89PNG\r\n\x1a\n\x00\x01", "image/png")
    after = side(b"\x89PNG\r\n\x1a\n\x00\x02", "image/png")
    change = rs.compare("chart", before, after)
    assert change.status == rs.CHANGED
    assert change.compared_as == rs.BINARY
    assert change.text_diff is None
    assert change.json_diff is None
    assert change.digests == [("Digest before", before.digest), ("Digest now", after.digest)]


def test_new_and_removed_outputs() -> None:
    new = rs.compare("appendix", None, side(b"more"))
    removed = rs.compare("draft", side(b"old"), None)
    assert (new.status, removed.status) == (rs.NEW, rs.REMOVED)
    assert new.digests == [("Digest now", sha256_digest(b"more"))]
    assert removed.digests == [("Digest before", sha256_digest(b"old"))]


def test_outputs_pair_by_name_and_one_unnamed_artifact_stands_for_the_one_unmapped_output() -> None:
    """R13.2-02: without an ``outputs`` map one artifact stands for the one declared output."""
    assert rs.named_outputs({}, ["sha256:" + "a" * 64], ["summary"]) == {
        "summary": "sha256:" + "a" * 64
    }
    mapped = rs.named_outputs(
        {"report": "sha256:" + "b" * 64},
        ["sha256:" + "b" * 64, "sha256:" + "c" * 64, "sha256:" + "d" * 64],
        ["report", "chart"],
    )
    assert mapped["report"] == "sha256:" + "b" * 64
    assert set(mapped) == {"report", "unnamed artifact " + "c" * 12, "unnamed artifact " + "d" * 12}
    pairs = rs.pair({"summary": "x", "draft": "y"}, {"summary": "z", "appendix": "w"})
    assert pairs == [("summary", "x", "z"), ("appendix", None, "w"), ("draft", "y", None)]
    in_contract_order = rs.pair({"b": "1", "a": "2"}, {"b": "3", "a": "4", "x": "5"}, ["a", "b"])
    assert [name for name, _old, _new in in_contract_order] == ["a", "b", "x"]


def test_the_card_counts_changed_and_unchanged_outputs() -> None:
    same = side(b"same")
    card = rs.Resubmission(
        previous_sequence=10,
        previous_at=None,
        previous_by="agent:w2",
        decision=None,
        outputs=(
            rs.compare("a", same, same),
            rs.compare("b", side(b"1"), side(b"2")),
            rs.compare("c", None, same),
        ),
    )
    assert [o.name for o in card.changed] == ["b", "c"]
    assert [o.name for o in card.unchanged] == ["a"]
    assert (card.count(rs.CHANGED), card.count(rs.NEW), card.count(rs.REMOVED)) == (1, 1, 0)
