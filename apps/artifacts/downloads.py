"""``GET``/``HEAD /api/v1/artifacts/{digest}``: the bytes, to a principal that may read them
(wire.md §4), verified against the digest before a byte is sent (R13.1-05).

Order: access (404 for anyone who may not read it, with the body a digest never stored gets)
→ ``If-None-Match`` (304: no bytes, so nothing to verify) → verification (409
``ARTIFACT_CORRUPTED``, nothing of the object sent) → ``Range`` (206 / 416) → the bytes.
Every answer that carries them, or stands for them (200, 206, 304, ``HEAD``), has the raw
headers of ``apps.artifacts.raw_headers``: this route runs ahead of Django's middleware, so
nothing else would add them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Iterator
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from missionweave.protocol.canonical import DIGEST_PREFIX
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .access import readable_blob
from .http import Exchange, Receive
from .ranges import ByteRange, Unsatisfiable, matches_etag, parse_range
from .raw_headers import download_name, raw_headers
from .retrieval import Corrupted, Verified, open_verified
from .services import corruption_record
from .storage import StoredObject

logger = logging.getLogger(__name__)

_readable_blob = database_sync_to_async(readable_blob)
_corruption_record = database_sync_to_async(corruption_record)

#: immutable content (R13.1-01): a client may keep it for a year without asking again;
#: private, because access depends on who asks (wire.md §4)
CACHE_CONTROL = "private, max-age=31536000, immutable"


def not_found(digest: str) -> ProtocolError:
    """The one answer for "not stored" and "not yours": existence is not revealed."""
    return ProtocolError(
        ErrorCode.NOT_FOUND, "no such artifact", requirement="wire§4", details={"digest": digest}
    )


def corrupted(digest: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.ARTIFACT_CORRUPTED,
        "the stored bytes no longer match the digest; none were sent",
        requirement="R13.1-05",
        details={"digest": digest},
    )


def _next_hashed(chunks: Iterator[bytes], hasher: Any) -> bytes | None:
    """The next chunk (hashed on the way, in the same worker thread), or ``None`` at the end."""
    chunk = next(chunks, None)
    if chunk is not None and hasher is not None:
        hasher.update(chunk)
    return chunk


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _stream(
    exchange: Exchange, stored: StoredObject, byte_range: ByteRange, *, whole: bool
) -> None:
    """The second pass of a large object. Sending the whole object, it is hashed again and
    its last chunk held back until the hash matches: bytes changed since the first pass are
    reported and the response is cut short, so a client never gets a complete copy of them."""
    request, responder = exchange.request, exchange.responder
    hasher = hashlib.sha256() if whole else None
    chunks = stored.chunks(byte_range.start, byte_range.stop)
    disconnected = asyncio.ensure_future(_wait_for_disconnect(exchange.receive))
    held: bytes | None = None
    sent = 0
    try:
        while True:
            chunk = await asyncio.to_thread(_next_hashed, chunks, hasher)
            if chunk is None:
                break
            if disconnected.done():
                return
            if held is not None:
                await responder.body(held, more=True)
                sent += len(held)
            held = chunk
        total = sent + len(held or b"")
        # A range cannot be hashed against the digest; it can come up short (truncated).
        actual = DIGEST_PREFIX + hasher.hexdigest() if hasher is not None else ""
        if total != byte_range.length or (hasher is not None and actual != request.digest):
            logger.error("artifact %s changed while it was being sent", request.digest)
            await _corruption_record(
                digest=request.digest,
                actual=actual,
                storage=exchange.storage,
                request=request.describe(exchange.principal),
            )
            return  # the response stays incomplete: the server closes the connection
        await responder.body(held or b"")
    finally:
        disconnected.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await disconnected
        close = getattr(chunks, "close", None)
        if close is not None:
            await asyncio.to_thread(close)


async def get(exchange: Exchange) -> None:
    request, responder, storage = exchange.request, exchange.responder, exchange.storage
    digest = request.digest
    blob = await _readable_blob(exchange.principal, digest)
    if blob is None:
        raise not_found(digest)
    etag = f'"{digest}"'
    common = [
        ("etag", etag),
        ("cache-control", CACHE_CONTROL),
        ("accept-ranges", "bytes"),
        *raw_headers(download_name(digest)),
    ]
    if matches_etag(request.header("if-none-match"), etag):
        await responder.start(304, common)
        await responder.body(b"")
        return
    try:
        verified: Verified = await asyncio.to_thread(
            open_verified,
            storage,
            digest,
            in_memory_bytes=settings.MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES,
        )
    except Corrupted as found:
        await _corruption_record(
            digest=digest,
            actual=found.actual,
            storage=storage,
            request=request.describe(exchange.principal),
        )
        raise corrupted(digest) from None
    try:
        await _answer(exchange, verified, common)
    finally:
        await asyncio.to_thread(verified.close)


async def _answer(exchange: Exchange, verified: Verified, common: list[tuple[str, str]]) -> None:
    request, responder = exchange.request, exchange.responder
    size = verified.size
    try:
        requested = parse_range(request.header("range"), size)
    except Unsatisfiable:
        await responder.error(
            ProtocolError(
                ErrorCode.MALFORMED,
                "the range selects no byte of the artifact",
                requirement="wire§4",
                details={"size": size},
            ),
            status=416,
            headers=[("content-range", f"bytes */{size}")],
        )
        return
    byte_range = requested or ByteRange(0, size)
    headers = [
        ("content-type", "application/octet-stream"),
        ("content-length", str(byte_range.length)),
        *common,
    ]
    if requested is not None:
        headers.append(("content-range", requested.content_range(size)))
    await responder.start(206 if requested is not None else 200, headers)
    if responder.head:
        await responder.body(b"")
    elif verified.data is not None:
        data = verified.data
        whole = byte_range.length == size
        await responder.body(data if whole else data[byte_range.start : byte_range.stop])
    elif verified.stored is not None:
        await _stream(exchange, verified.stored, byte_range, whole=byte_range.length == size)
