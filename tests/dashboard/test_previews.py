"""Artifact previews (issue 12 §3): what a reviewer sees of an artifact is bytes the server
verified (R13.1-05), shown as what the manifest says they are (R13.1-03), safely.

The first half needs no database: the formats (``preview_formats``) on hostile input. The
second publishes real artifacts through the write path (``artifact_world``) and previews them
with ``previews.preview_of``, in a store folder of the test's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.artifacts.models import Blob, CorruptionReport
from apps.artifacts.storage import configured_storage
from apps.dashboard import preview_formats as formats
from apps.dashboard import previews
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST
from missionweave.protocol.identifiers import AUTHORITY
from tests.factories import World, grant, group, human, store_bytes

from .artifact_world import PNG, XSS, Workshop, assert_inert, damage, object_path, workshop


@pytest.fixture(autouse=True)
def own_store(settings: Any, tmp_path: Path) -> None:
    """Objects in the test's own folder: damaging one cannot touch another test's."""
    settings.MWP_ARTIFACT_STORAGE = "filesystem"
    settings.MWP_ARTIFACT_DIR = tmp_path / "artifacts"


# --- what markup may come out ---------------------------------------------------------------


@pytest.mark.parametrize("source", XSS)
def test_markdown_renders_hostile_input_inert(source: str) -> None:
    """issue 12 §3: Markdown with raw HTML off, links only http(s)/mailto/relative, no image
    fetched: script tags, event handlers, ``javascript:`` and ``data:`` URLs come out as text."""
    assert_inert(formats.render_markdown(source))


def test_markdown_keeps_safe_links_and_never_fetches_images() -> None:
    html = formats.render_markdown(
        "# Title\n\n[docs](https://example.org/a?b=1) [mail](mailto:a@example.org) "
        "[here](../notes.md) ![diagram](https://example.org/d.png)\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert '<a href="https://example.org/a?b=1" rel="nofollow noopener noreferrer">docs</a>' in html
    assert 'href="mailto:a@example.org"' in html
    assert 'href="../notes.md"' in html
    assert "<img" not in html
    assert "[image: diagram]" in html
    # the artifact's own "#" sits under the page's h1 and h2
    assert "<h3>Title</h3>" in html
    assert '<th scope="col">a</th>' in html


# --- sniffing, JSON, CSV, diff --------------------------------------------------------------


def test_sniffing_is_conservative() -> None:
    """Only four images are images; SVG, NUL-carrying and non-UTF-8 bytes are not."""
    assert formats.image_type(PNG) == "image/png"
    assert formats.image_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert formats.image_type(b"GIF89a....") == "image/gif"
    assert formats.image_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert formats.image_type(b'<svg xmlns="http://www.w3.org/2000/svg"/>') is None
    assert formats.decode_text(b"caf\xc3\xa9", complete=True) == "café"
    assert formats.decode_text(b"caf\xc3", complete=False) == "caf"  # cut inside a character
    assert formats.decode_text(b"caf\xc3", complete=True) is None
    assert formats.decode_text(b"a\x00b", complete=True) is None
    assert formats.looks_like_json('  {"a": 1}')
    assert not formats.looks_like_json("42")
    assert not formats.looks_like_json("{not json")


def test_json_is_indented_by_two_in_key_order() -> None:
    assert formats.pretty_json('{"z": 1, "a": [true, null], "m": {"y": "é"}}') == (
        '{\n  "z": 1,\n  "a": [\n    true,\n    null\n  ],\n  "m": {\n    "y": "é"\n  }\n}'
    )
    assert formats.pretty_json("[" * 100_000) is None  # too deep: shown as text instead


def test_csv_cells_that_start_like_formulas_are_flagged_and_stay_text() -> None:
    """issue 12 §3: =, +, -, @ at the start of a cell (CSV injection) is shown as the text it
    is, and flagged; a signed number is just a number."""
    table = formats.csv_table(
        'name,value\n"=HYPERLINK(""http://evil.example"",""x"")",+1\n@SUM(A1),-2.5\n'
        '-cmd|x,"a\nb"\n',
        complete=True,
    )
    assert table is not None
    cells = [[(c.text, c.formula) for c in row] for row in table.rows]
    assert cells == [
        [('=HYPERLINK("http://evil.example","x")', True), ("+1", False)],
        [("@SUM(A1)", True), ("-2.5", False)],
        [("-cmd|x", True), ("a\nb", False)],
    ]


def test_csv_shows_the_header_and_200_rows_and_counts_the_rest() -> None:
    text = "n,square\n" + "".join(f"{n},{n * n}\n" for n in range(250))
    table = formats.csv_table(text, complete=True)
    assert table is not None
    assert [c.text for c in table.header] == ["n", "square"]
    assert len(table.rows) == formats.CSV_ROWS
    assert table.more_rows == 50
    assert not table.partial
    ragged = formats.csv_table("a\n1,2,3\n", complete=True)
    assert ragged is not None
    assert [c.text for c in ragged.header] == ["a", "", ""]
    # a prefix of a file: its last, cut line is not shown as a row
    cut = formats.csv_table("a,b\n1,2\n3,4", complete=False)
    assert cut is not None
    assert [[c.text for c in row] for row in cut.rows] == [["1", "2"]]
    assert cut.partial


def test_a_diff_is_numbered_line_by_line() -> None:
    diff = formats.unified_diff("a\nb\nc\n", "a\nB\nc\nd\n")
    assert diff is not None
    assert [(line.kind, line.old, line.new, line.text) for line in diff.lines] == [
        ("hunk", None, None, "@@ -1,3 +1,4 @@"),
        ("context", 1, 1, "a"),
        ("removed", 2, None, "b"),
        ("added", None, 2, "B"),
        ("context", 3, 3, "c"),
        ("added", None, 4, "d"),
    ]
    assert (diff.added, diff.removed, diff.more_lines) == (2, 1, 0)
    assert formats.unified_diff("same\n", "same\n") == formats.Diff((), 0, 0, 0)
    too_long = "\n".join(str(n) for n in range(formats.DIFF_LINES + 1))
    assert formats.unified_diff(too_long, "x") is None


# --- previews of published artifacts -----------------------------------------------------------


@pytest.fixture
def shop(world: World) -> Workshop:
    return workshop(world)


def preview(shop: Workshop, digest: str, **kwargs: Any) -> previews.Preview:
    return previews.preview_of(shop.group, digest, principal=shop.world.olga.principal, **kwargs)


def test_every_kind_is_shown_as_what_the_manifest_says(shop: Workshop) -> None:
    """R13.1-03: the media type is the manifest's; each kind gets its own view."""
    text = preview(shop, shop.publish(b"plain words\n", "text/plain"))
    assert (text.kind, text.text, text.media_type, text.declared) == (
        "text",
        "plain words\n",
        "text/plain",
        True,
    )

    md = preview(shop, shop.publish(b"# Summary\n\n*three* incidents\n", "text/markdown"))
    assert md.kind == "markdown"
    assert "<em>three</em>" in md.html

    data = preview(shop, shop.publish(b'{"b": 1, "a": {"c": [1, 2]}}', "application/json"))
    assert data.kind == "json"
    assert data.text == json.dumps({"b": 1, "a": {"c": [1, 2]}}, indent=2)

    table = preview(shop, shop.publish(b"city,count\nParis,3\n", "text/csv; charset=utf-8"))
    assert table.kind == "csv"
    assert table.table is not None
    assert [[c.text for c in row] for row in table.table.rows] == [["Paris", "3"]]

    image = preview(shop, shop.publish(PNG, "image/png"))
    assert (image.kind, image.media_type, image.size) == ("image", "image/png", len(PNG))
    assert image.text == ""

    blob = bytes(range(256)) * 4
    binary = preview(shop, shop.publish(blob, "application/pdf"))
    assert (binary.kind, binary.size, binary.text) == ("binary", len(blob), "")

    svg = (
        b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>'
    )
    drawing = preview(shop, shop.publish(svg, "image/svg+xml"))
    assert drawing.kind == "text"  # SVG can carry script: its source, never a drawing
    assert drawing.text == svg.decode()


def test_without_a_named_type_the_bytes_are_sniffed_conservatively(shop: Workshop) -> None:
    """The authority's ``application/octet-stream`` names no type: images by their magic,
    UTF-8 text (JSON when it parses), anything else a download."""
    unnamed = "application/octet-stream"
    assert preview(shop, shop.publish(PNG + b"!", unnamed)).kind == "image"
    sniffed = preview(shop, shop.publish(b'[1, {"k": "v"}]', unnamed))
    assert (sniffed.kind, sniffed.media_type, sniffed.declared) == (
        "json",
        "application/json",
        False,
    )
    assert preview(shop, shop.publish(b"# not taken for markdown", unnamed)).kind == "text"
    assert preview(shop, shop.publish(b"\x00\x01\x02binary", unnamed)).kind == "binary"
    svg = b"<svg xmlns='http://www.w3.org/2000/svg'/>"
    assert preview(shop, shop.publish(svg, unnamed)).kind == "text"


def test_bytes_that_are_not_what_the_manifest_says_fall_back(shop: Workshop) -> None:
    invalid = preview(shop, shop.publish(b'{"unclosed": ', "application/json"))
    assert (invalid.kind, invalid.text, invalid.note) == (
        "text",
        '{"unclosed": ',
        "not valid JSON: shown as text",
    )
    fake_png = preview(shop, shop.publish(b"not a png at all", "image/png"))
    assert fake_png.kind == "binary"
    not_utf8 = preview(shop, shop.publish(b"caf\xe9\n", "text/plain"))
    assert not_utf8.kind == "binary"


def test_hostile_markdown_in_an_artifact_is_inert(shop: Workshop) -> None:
    shown = preview(shop, shop.publish("\n\n".join(XSS).encode(), "text/markdown"))
    assert shown.kind == "markdown"
    assert_inert(shown.html)


def test_a_large_text_is_verified_whole_and_shown_in_part(shop: Workshop) -> None:
    """R13.1-05 with a cap: every byte is hashed, only the first 512 KiB are kept and shown."""
    line = b"0123456789abcdef" * 4 + b"\n"
    data = line * (previews.PREVIEW_BYTES // len(line) + 2000)
    shown = preview(shop, shop.publish(data, "text/plain"))
    assert shown.kind == "text"
    assert shown.truncated
    assert (shown.shown_bytes, shown.size) == (previews.PREVIEW_BYTES, len(data))
    assert shown.text.encode() == data[: previews.PREVIEW_BYTES]

    big_json = b"[" + b",".join(b"%d" % n for n in range(200_000)) + b"]"
    assert len(big_json) > previews.PREVIEW_BYTES
    as_text = preview(shop, shop.publish(big_json, "application/json"))
    assert (as_text.kind, as_text.truncated, as_text.note) == ("text", True, "too large to format")


def test_a_corrupted_object_shows_no_byte_and_is_reported(shop: Workshop) -> None:
    """R13.1-05: bytes that no longer hash to the digest are ``corrupted``: nothing of them
    is in the preview, and the corruption is recorded for the administrators."""
    digest = shop.publish(b"the reviewed summary\n", "text/plain")
    damage(digest, b"a forged summary\n")
    shown = preview(shop, digest)
    assert shown.kind == "corrupted"
    assert not shown.verified
    assert (shown.text, shown.html, shown.table, shown.diff) == ("", "", None, None)
    report = CorruptionReport.objects.get(digest=digest, resolved_at__isnull=True)
    assert report.actual == sha256_digest(b"a forged summary\n")
    assert report.request == f"dashboard preview by {shop.world.olga.principal}"

    object_path(digest).unlink()  # the object is gone from the store altogether
    assert preview(shop, digest).kind == "corrupted"


def test_a_cited_digest_with_no_stored_bytes_is_missing(shop: Workshop) -> None:
    digest = shop.publish(b"collected by mistake\n", "text/plain")
    configured_storage().delete(digest)
    Blob.objects.filter(pk=digest).delete()
    shown = preview(shop, digest)
    assert (shown.kind, shown.size, shown.verified) == ("missing", None, False)
    assert not CorruptionReport.objects.filter(digest=digest).exists()


def test_the_badge_says_who_made_and_who_signed_the_manifest(shop: Workshop) -> None:
    """R13.1-03: the producer, and whether the producer's key or the authority's signed."""
    by_authority = preview(shop, shop.publish(b"unsigned manifest\n"))
    assert by_authority.producer == shop.world.w2.principal
    assert by_authority.producer_version == "summariser 1.4.2"
    assert (by_authority.signed_by, by_authority.signed_by_authority) == (AUTHORITY, True)
    by_producer = preview(shop, shop.publish(b"signed manifest\n", signed=True))
    assert by_producer.signed_by == shop.world.w2.principal
    assert by_producer.signed_by_producer
    assert by_producer.short_digest == by_producer.digest[:19]


def test_a_derived_artifact_is_diffed_against_its_source(shop: Workshop) -> None:
    """R13.1-04, issue 12: the changes from the manifest's first source, line by line."""
    draft = shop.publish(b"# Draft\n\nTwo incidents.\nOne open.\n", "text/markdown")
    final = shop.publish(
        b"# Final\n\nTwo incidents.\nBoth closed.\n", "text/markdown", sources=(draft,)
    )
    shown = preview(shop, final)
    assert shown.diff_source == draft
    assert not shown.diff_asked
    assert shown.diff is not None
    changes = [(line.kind, line.text) for line in shown.diff.lines if line.kind != "context"]
    assert changes == [
        ("hunk", "@@ -1,4 +1,4 @@"),
        ("removed", "# Draft"),
        ("added", "# Final"),
        ("removed", "One open."),
        ("added", "Both closed."),
    ]

    # a source named by the caller, here the contract's input
    asked = preview(shop, final, source=INCIDENT_REPORTS_DIGEST)
    assert (asked.diff_source, asked.diff_asked) == (INCIDENT_REPORTS_DIGEST, True)
    assert asked.diff is not None
    assert asked.diff.removed == 1

    image = preview(shop, shop.publish(PNG, "image/png", sources=(draft,)))
    assert (image.diff, image.diff_source) == (None, "")  # no comparison with a picture
    asked_image = preview(shop, shop.publish(PNG + b"2", "image/png"), source=draft)
    assert (asked_image.diff, asked_image.diff_note) == (None, "this artifact is not text")

    stranger = store_bytes(shop.world.w1.principal, b"never cited here")
    uncited = preview(shop, final, source=stranger)
    assert (uncited.diff, uncited.diff_note) == (
        None,
        "the source is not cited in this group's log",
    )


def test_only_members_of_a_group_citing_it_get_a_preview(shop: Workshop) -> None:
    """wire§4, wire§9: not a member, not cited here, or never stored — the same refusal."""
    digest = shop.publish(b"for the group only\n")
    world = shop.world
    outsider = human("oscar")
    other = group("g-other", world.org)
    grant(world.alice, other, outsider, "observer")
    for group_id, principal in [
        (world.group, outsider.principal),  # not a member of the citing group
        (other, outsider.principal),  # a member of a group that does not cite it
        (world.group, world.olga.principal.replace("olga", "nobody")),
    ]:
        with pytest.raises(previews.ArtifactNotFound):
            previews.preview_of(group_id, digest, principal=principal)
    for digest_ in (sha256_digest(b"never stored"), "sha256:abc", "../../etc/passwd"):
        with pytest.raises(previews.ArtifactNotFound):
            previews.preview_of(world.group, digest_, principal=world.olga.principal)


def test_a_preview_is_one_query_and_one_read_of_the_object(
    shop: Workshop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server time stays small: the cited row, its blob and the membership in one query, the
    object read once (hashed and kept in the same pass), no scan of the log."""
    digest = shop.publish(b"read me once\n" * 1000, "text/plain", sources=())
    storage = configured_storage()
    opened: list[str] = []
    real_open = storage.open

    def counting_open(digest_: str) -> Any:
        opened.append(digest_)
        return real_open(digest_)

    monkeypatch.setattr(storage, "open", counting_open)
    with CaptureQueriesContext(connection) as queries:
        shown = preview(shop, digest)
    assert shown.kind == "text"
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert opened == [digest]
