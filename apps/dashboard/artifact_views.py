"""An artifact's page and its verified bytes, for the people of a group whose log cites it.

``groups/<g>/artifacts/<digest>/``: the verified badge, the manifest and provenance the log
records (R13.1-03, R13.1-04), where the log cites it, and a preview (``previews``).
``…/raw/``: the bytes, verified against the digest before the first one is sent (R13.1-05),
always as an attachment under ``apps.artifacts.raw_headers`` (the preview's ``<img>`` still
shows an image: those headers govern a navigation to the bytes, not an embedding).

Access is the dashboard's (an active member, ``access_membership``) and wire.md §4's (the
group's log cites the digest). Everything else — a malformed digest, one never stored, one
cited only in another group — is the same 404, so a page never tells a digest's existence
(wire.md §9: a digest is not a key). A corrupted object is 409 with a message, never a byte.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Callable, Iterator

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    StreamingHttpResponse,
)
from django.shortcuts import render
from django.urls import URLPattern, path
from django.views.decorators.http import require_safe

from apps.artifacts.raw_headers import download_name, raw_headers
from apps.artifacts.retrieval import Corrupted, Verified, open_verified
from apps.artifacts.services import corruption_record
from apps.artifacts.storage import StoredObject, configured_storage
from apps.ledger.write_path import Caller
from missionweave.protocol.canonical import DIGEST_PREFIX

from . import previews
from .access import access_membership
from .preview_formats import image_type
from .streaming import streamed

#: the one answer for a digest that is malformed, not cited here, or not stored
NOT_FOUND = "no such artifact"
#: the extension a download is named with, by the type the bytes turned out to be
_EXTENSIONS = {
    "image/jpeg": ".jpg",
    "text/markdown": ".md",
    "text/csv": ".csv",
    "text/plain": ".txt",
    "application/json": ".json",
}


def _principal(request: HttpRequest) -> str:
    return Caller.for_user(request.user).principal


def _page_status(kind: str) -> int:
    return {previews.CORRUPTED: 409, previews.UNAVAILABLE: 503}.get(kind, 200)


@login_required
@require_safe
def artifact_detail(request: HttpRequest, group: str, digest: str) -> HttpResponse:
    """The artifact page (issue 12 §3); 409 when the stored bytes no longer verify."""
    membership = access_membership(request, group)
    try:
        page = previews.artifact_page(group, digest, principal=_principal(request))
    except previews.ArtifactNotFound:
        raise Http404(NOT_FOUND) from None
    context = {"group": membership.group, "page": page, "preview": page.preview}
    return render(
        request,
        "dashboard/artifacts/artifact-detail.html",
        context,
        status=_page_status(page.preview.kind),
    )


def _raw_headers(response: HttpResponseBase, *, filename: str) -> None:
    """The bytes are someone else's content: never sniffed into a page, never a script, never
    shown as a page at all (their own Content-Security-Policy, which Django's CSP middleware
    leaves in place); cached only by the browser of the member who may read them."""
    for name, value in raw_headers(filename):
        response[name] = value
    response["Cache-Control"] = "private"


class _HeldBack:
    """The second pass over a large object (the first verified it): hashed again, its last
    chunk held back until the hash matches, so bytes changed between the passes never make
    a complete response (the Content-Length is never reached). An iterator with ``close``,
    which Django calls when the response ends, sent or not (a ``HEAD``)."""

    def __init__(
        self, stored: StoredObject, digest: str, on_mismatch: Callable[[str], None]
    ) -> None:
        self._stored: StoredObject | None = stored
        self._digest = digest
        self._on_mismatch = on_mismatch

    def __iter__(self) -> Iterator[bytes]:
        if self._stored is None:
            return
        hasher = hashlib.sha256()
        held: bytes | None = None
        for chunk in self._stored.chunks():
            hasher.update(chunk)
            if held is not None:
                yield held
            held = chunk
        actual = DIGEST_PREFIX + hasher.hexdigest()
        if actual != self._digest:
            self._on_mismatch(actual)
            return
        if held:
            yield held

    def close(self) -> None:
        if self._stored is not None:
            self._stored.close()
            self._stored = None


def _corrupted(request: HttpRequest, membership_group: object, digest: str) -> HttpResponse:
    return render(
        request,
        "dashboard/artifacts/artifact-corrupted.html",
        {"group": membership_group, "digest": digest},
        status=409,
    )


@login_required
@require_safe
def artifact_raw(request: HttpRequest, group: str, digest: str) -> HttpResponseBase:
    """The verified bytes as an attachment, typed ``image/…`` only when they are PNG, JPEG, GIF
    or WebP (the preview's ``<img>``); 409 and no byte when they do not verify (R13.1-05)."""
    membership = access_membership(request, group)
    principal = _principal(request)
    try:
        declared = previews.downloadable(group, digest, principal=principal)
    except previews.ArtifactNotFound:
        raise Http404(NOT_FOUND) from None
    storage = configured_storage()
    described = f"GET {request.path} by {principal}"

    def report(actual: str) -> None:
        corruption_record(digest=digest, actual=actual, storage=storage, request=described)

    try:
        verified: Verified = open_verified(
            storage, digest, in_memory_bytes=settings.MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES
        )
    except Corrupted as found:
        report(found.actual)
        return _corrupted(request, membership.group, digest)
    if verified.stored is None:
        data = verified.data or b""
        head = data[:16]
    else:
        head = b"".join(verified.stored.chunks(0, 16))
    # An image type only for what the bytes themselves show to be one of the four images,
    # whatever the manifest says: the Content-Type sent is then exactly what they are.
    image = image_type(head)
    response: HttpResponseBase
    if verified.stored is None:
        response = HttpResponse(data, content_type=image or "application/octet-stream")
    else:
        body = _HeldBack(verified.stored, digest, report)
        response = StreamingHttpResponse(
            streamed(request, body), content_type=image or "application/octet-stream"
        )
        response["Content-Length"] = str(verified.size)
    _raw_headers(response, filename=_filename(digest, image or declared))
    return response


def _filename(digest: str, media_type: str) -> str:
    """``<first 16 hex digits>.<extension of its type>``: a name for the saved file."""
    extension = _EXTENSIONS.get(media_type) or mimetypes.guess_extension(media_type) or ".bin"
    return download_name(digest, extension)


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/artifacts/<str:digest>/",
        artifact_detail,
        name="artifact",
    ),
    path(
        "groups/<str:group>/artifacts/<str:digest>/raw/",
        artifact_raw,
        name="artifact-raw",
    ),
]
