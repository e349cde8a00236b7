"""The headers every response carrying an artifact's raw bytes is sent with.

An artifact is bytes someone else uploaded (wire.md §9: a digest says what they are, not who
may trust them), served from the same origin as the dashboard. Opened directly, they must
never become a page of ours: a browser is told not to guess a type the server did not send
(``nosniff``), to save them rather than show them (``attachment``), and, should it render
them anyway, to treat them as a sandboxed document of no origin that may load nothing and
run nothing (the CSP). An ``<img>`` on a dashboard page still shows an image: these headers
govern what a browser does when it navigates to the bytes, not when a page embeds them.

The API's ``GET``/``HEAD /api/v1/artifacts/{digest}`` (``apps.artifacts.downloads``, ahead
of Django's middleware) and the dashboard's ``…/raw/`` (``apps.dashboard.artifact_views``)
both send exactly these.
"""

from __future__ import annotations

from django.utils.http import content_disposition_header

from missionweave.protocol.canonical import DIGEST_PREFIX

#: nothing loads, nothing runs, nothing frames it; ``sandbox`` also gives it an opaque origin
RAW_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"
#: how many hex digits of the digest name a saved file
NAME_DIGITS = 16


def download_name(digest: str, extension: str = ".bin") -> str:
    """``<first 16 hex digits of the digest><extension>``: a name made only of the digest's
    hex digits and a known extension, so nothing an uploader wrote reaches a file name."""
    return digest.removeprefix(DIGEST_PREFIX)[:NAME_DIGITS] + extension


def raw_headers(filename: str) -> list[tuple[str, str]]:
    """The three headers of a raw response, ``filename`` quoted per RFC 6266 (``filename*``
    with UTF-8 for a name ASCII cannot spell)."""
    return [
        ("content-disposition", content_disposition_header(True, filename) or "attachment"),
        ("x-content-type-options", "nosniff"),
        ("content-security-policy", RAW_CSP),
    ]
