"""The artifact page and its raw bytes (issue 12 §3), through Django's test client.

Who may look (wire.md §4, §9): an active member of a group whose log cites the digest;
everyone and everything else gets one and the same 404. What they get (R13.1-05): bytes that
hashed to the digest, or a 409 with no byte of them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.artifacts.models import CorruptionReport
from apps.artifacts.raw_headers import RAW_CSP
from apps.artifacts.storage import configured_storage
from apps.dashboard.artifact_views import _HeldBack
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST
from tests.factories import grant, group, store_bytes

from .artifact_world import PNG, XSS, Workshop, assert_inert, damage, workshop
from .conftest import Dashboard, logged_in
from .html import element, text


@pytest.fixture(autouse=True)
def own_store(settings: Any, tmp_path: Path) -> None:
    settings.MWP_ARTIFACT_STORAGE = "filesystem"
    settings.MWP_ARTIFACT_DIR = tmp_path / "artifacts"


@pytest.fixture
def shop(dash: Dashboard) -> Workshop:
    return workshop(dash.world)


CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')


def page_url(group_id: str, digest: str) -> str:
    return reverse("dashboard:artifact", args=[group_id, digest])


def raw_url(group_id: str, digest: str) -> str:
    return reverse("dashboard:artifact-raw", args=[group_id, digest])


def test_the_page_shows_the_verified_artifact_its_manifest_provenance_and_citations(
    dash: Dashboard, shop: Workshop
) -> None:
    """R13.1-03, R13.1-04: badge, manifest, sources and derived artifacts as links to their
    pages, where the log cites it (linked to the WorkItem), and the rendered preview."""
    draft = shop.publish(b"# Draft\n\nTwo incidents.\n", "text/markdown", signed=True)
    final = shop.publish(b"# Final\n\nTwo incidents, closed.\n", "text/markdown", sources=(draft,))
    response = logged_in(dash.maria).get(page_url(shop.group, draft))
    assert response.status_code == 200
    html = response.content.decode()

    badge = element(html, "data-badge", "verified")
    assert draft[:19] in badge
    assert f'title="{draft}"' in badge
    assert "text/markdown" in text(badge)
    assert "by w2 · summariser 1.4.2" in text(badge)  # the agent card's name
    assert "manifest signed by its producer" in text(badge)
    assert text(element(html, "data-field", "signed-by")) == "its producer, w2"

    assert "<h3>Draft</h3>" in html
    assert 'href="/static/dashboard/preview.css"' in html or "preview.css" in html
    sources = element(html, "data-field", "sources")
    assert f'href="{page_url(shop.group, INCIDENT_REPORTS_DIGEST)}"' in sources
    derived = element(html, "data-field", "derived")
    assert f'href="{page_url(shop.group, final)}"' in derived
    citations = element(html, "data-field", "citations")
    work_item = reverse("dashboard:work-item", args=[shop.group, shop.item])
    assert f'href="{work_item}"' in citations
    assert "artifact.published" in citations
    assert "$.manifest.digest" in citations
    assert "$.manifest.sources[0]" in citations  # the final names the draft as its source

    # the final's page shows its changes from the draft
    final_html = logged_in(dash.maria).get(page_url(shop.group, final)).content.decode()
    assert "manifest signed by the authority" in final_html
    assert 'data-change="removed"' in final_html
    assert 'data-change="added"' in final_html
    assert "Two incidents, closed." in final_html


def test_the_page_explains_what_is_not_there(dash: Dashboard, shop: Workshop) -> None:
    """Empty states say what would appear: no tools named, nothing derived yet."""
    digest = shop.publish(b"lonely\n", sources=(), tool_versions={})
    html = logged_in(dash.maria).get(page_url(shop.group, digest)).content.decode()
    assert "none named" in html
    assert "The manifest names no source." in html
    assert "Nothing published in this group names it as a source yet." in html


def test_hostile_markdown_renders_inert_on_the_page(dash: Dashboard, shop: Workshop) -> None:
    """issue 12 §3: no script, no handler, no javascript: link anywhere in the page's content
    (the site's own modules, after it, are loaded from /static/ under the CSP)."""
    digest = shop.publish("\n\n".join(XSS).encode(), "text/markdown")
    html = logged_in(dash.maria).get(page_url(shop.group, digest)).content.decode()
    assert_inert(html.split("<main", 1)[1].split("</main>", 1)[0])
    after = html.split("</main>", 1)[1]
    assert re.findall(r"<script[^>]*>", after) == [
        '<script type="module" src="/static/dashboard/local-time.js">',
        '<script type="module" src="/static/dashboard/text-limits.js">',
        '<script type="module" src="/static/dashboard/bell.js">',  # the header's bell (issue 36)
    ]
    assert "javascript:" not in " ".join(re.findall(r'href="([^"]*)"', html))
    assert not re.search(r"<[^>]*\sonerror=", html)


def test_csv_formula_cells_are_shown_as_text_on_the_page(dash: Dashboard, shop: Workshop) -> None:
    rows = "".join(f"{n},=CMD|' /C calc'!A0\n" for n in range(205))
    digest = shop.publish(f"n,payload\n{rows}".encode(), "text/csv")
    html = logged_in(dash.maria).get(page_url(shop.group, digest)).content.decode()
    assert html.count('class="preview-formula"') == 200
    assert "=CMD|&#x27; /C calc&#x27;!A0" in html
    assert text(element(html, "data-field", "more-rows")) == "5 more rows."
    assert '<th scope="col">n</th>' in html


def test_a_large_text_page_says_how_much_it_shows(dash: Dashboard, shop: Workshop) -> None:
    data = b"x" * (600 * 1024)
    digest = shop.publish(data)
    html = logged_in(dash.maria).get(page_url(shop.group, digest)).content.decode()
    note = text(element(html, "data-field", "truncated"))
    assert note.startswith("Showing the first 512.0 KB of 600.0 KB: download the whole artifact")
    assert f'href="{raw_url(shop.group, digest)}"' in element(html, "data-field", "truncated")
    assert html.count("x" * 1024) == 512  # exactly 512 KiB of it is on the page


def test_raw_bytes_are_an_attachment_with_nosniff_and_a_closed_csp(
    dash: Dashboard, shop: Workshop
) -> None:
    """The four image types typed as images (the preview's ``<img>`` shows them), anything
    else as octets; always an attachment, never sniffed, never able to run script (SVG
    included). tests/artifacts/test_raw_headers.py holds HEAD and ranges, over HTTP."""
    client = logged_in(dash.maria)
    image = shop.publish(PNG, "image/png")
    html = client.get(page_url(shop.group, image)).content.decode()
    assert (
        f'<img class="preview-image" src="{raw_url(shop.group, image)}" alt="Image artifact' in html
    )

    response = client.get(raw_url(shop.group, image))
    assert response.status_code == 200
    assert response.content == PNG
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{image.removeprefix("sha256:")[:16]}.png"'
    )
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == RAW_CSP
    assert response["Cache-Control"] == "private"

    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    drawing = shop.publish(svg, "image/svg+xml")
    response = client.get(raw_url(shop.group, drawing))
    assert response.content == svg
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["Content-Security-Policy"] == RAW_CSP
    page = client.get(page_url(shop.group, drawing)).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page

    notes = shop.publish(b"# notes\n", "text/markdown")
    response = client.get(raw_url(shop.group, notes))
    assert response["Content-Disposition"] == (
        f'attachment; filename="{notes.removeprefix("sha256:")[:16]}.md"'
    )


def test_a_large_object_is_streamed_and_verified_again_on_the_way(
    dash: Dashboard, shop: Workshop, settings: Any
) -> None:
    """R13.1-05 beyond the in-memory limit: hashed in a first pass, streamed in a second that
    hashes again and keeps its last chunk back until the hash matches."""
    settings.MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES = 1024
    data = bytes(range(256)) * 64
    digest = shop.publish(data, "application/octet-stream")
    response = logged_in(dash.maria).get(raw_url(shop.group, digest))
    assert response.status_code == 200
    assert response.streaming
    assert int(response["Content-Length"]) == len(data)
    assert b"".join(response.streaming_content) == data


def test_bytes_changed_between_the_two_passes_never_make_a_complete_response(
    shop: Workshop,
) -> None:
    data = b"first pass saw these bytes\n" * 100
    digest = shop.publish(data)
    stored = configured_storage().open(digest)
    assert stored is not None
    mismatches: list[str] = []
    body = _HeldBack(stored, digest, mismatches.append)
    damage(digest, b"F" + data[1:])  # the same open file, edited in place
    sent = b"".join(body)
    body.close()
    assert sent == b""  # one chunk, held back and then withheld
    assert mismatches == [sha256_digest(b"F" + data[1:])]


def test_a_corrupted_artifact_is_409_with_a_red_badge_and_no_byte(
    dash: Dashboard, shop: Workshop
) -> None:
    """R13.1-05: the page says corrupted and shows nothing of the object; the raw route
    answers 409 with a message, never the bytes; both are reported."""
    original = b"SECRET-ORIGINAL the reviewed summary\n"
    digest = shop.publish(original)
    forged = b"SECRET-FORGED a different summary\n"
    damage(digest, forged)
    client = logged_in(dash.maria)

    response = client.get(page_url(shop.group, digest))
    assert response.status_code == 409
    html = response.content.decode()
    assert "corrupted" in text(element(html, "data-badge", "corrupted"))
    assert element(html, "data-field", "corrupted")
    assert b"SECRET" not in response.content
    assert raw_url(shop.group, digest) not in html  # no download offered

    raw = client.get(raw_url(shop.group, digest))
    assert raw.status_code == 409
    assert b"SECRET" not in raw.content
    assert "no longer hash to that digest" in raw.content.decode()
    report = CorruptionReport.objects.get(digest=digest, resolved_at__isnull=True)
    assert report.count == 2
    assert report.request == f"GET {raw_url(shop.group, digest)} by {dash.maria.principal}"


def test_not_a_member_is_404_on_the_page_and_the_bytes(dash: Dashboard, shop: Workshop) -> None:
    """wire§4: nina belongs to no group; the page and the bytes do not exist for her."""
    digest = shop.publish(b"members only\n")
    client = logged_in(dash.nina)
    assert client.get(page_url(shop.group, digest)).status_code == 404
    assert client.get(raw_url(shop.group, digest)).status_code == 404


def test_a_member_of_another_group_that_cites_nothing_is_404(
    dash: Dashboard, shop: Workshop
) -> None:
    """wire§4: maria's membership of g-other does not reach an artifact only g-research's
    log cites, through either group's URL for her in g-other."""
    digest = shop.publish(b"cited in g-research only\n")
    other = group("g-other", shop.world.org)
    grant(shop.world.alice, other, dash.nina, "observer")
    client = logged_in(dash.nina)
    for url in (page_url(other, digest), raw_url(other, digest), page_url(shop.group, digest)):
        assert client.get(url).status_code == 404, url


def test_a_digest_not_cited_here_is_the_same_404_as_a_malformed_one(
    dash: Dashboard, shop: Workshop
) -> None:
    """wire§9: a digest is not a key. Stored but never cited here, never stored, malformed:
    one answer, byte for byte, on the page and on the raw route."""
    uncited = store_bytes(shop.world.w1.principal, b"uploaded, never cited\n")
    client = logged_in(dash.maria)
    bodies = set()
    for digest in (uncited, sha256_digest(b"never stored"), "sha256:nothex", "md5:abc"):
        for url in (page_url(shop.group, digest), raw_url(shop.group, digest)):
            response = client.get(url)
            assert response.status_code == 404, url
            # the page's log-out form carries a fresh CSRF mask each time: not a difference
            bodies.add(CSRF.sub(b"", response.content))
    assert len(bodies) == 1


def test_signed_out_visitors_are_sent_to_log_in(shop: Workshop) -> None:
    digest = shop.publish(b"needs a session\n")
    for url in (page_url(shop.group, digest), raw_url(shop.group, digest)):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("dashboard:login"))
