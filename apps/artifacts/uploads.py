"""``PUT /api/v1/artifacts/{digest}``: stream the body to a spool while hashing, keep it only
if it hashes to the digest (wire.md §4, R13.1-01), never past the size limit (wire.md §1).

The caller has authenticated the request before this reads a byte of the body. The body
arrives as ASGI ``http.request`` messages (uvicorn passes them on as they come off the
socket); they are gathered into ~1 MiB batches, each hashed and written by a worker thread
while the next batch is received, so the socket, the hash and the disk overlap and no
message is copied to be joined.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from missionweave.protocol.errors import ErrorCode, ProtocolError

from .http import Exchange, Receive, Request, body_parts
from .services import hash_mismatch, too_large, upload_record
from .storage import CHUNK_BYTES, Spool, is_no_room

_record = database_sync_to_async(upload_record)


def _unsupported_media_type() -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        "a PUT needs a Content-Type (any type)",
        requirement="wire§1",
    )


async def _receive_into(
    request: Request, receive: Receive, spool: Spool, *, limit: int, declared: int | None
) -> int:
    """Receive the whole body into ``spool``; its size. ``ClientGone`` on a disconnect,
    ``TOO_LARGE`` as soon as more than ``limit`` bytes arrived (``body_parts``).

    A disk with no room left stops the writing, not the reading (issue 16 §8): the rest of
    the body is read and dropped, so a client still sending gets its 507 ``STORAGE_FULL``
    rather than a reset connection, and the ``OSError`` is raised once the body has ended.
    """
    batch: list[bytes] = []
    batch_bytes = 0
    total = 0
    writing: asyncio.Future[Any] | None = None
    no_room: OSError | None = None

    async def settle() -> None:
        """Wait for the batch being written; remember a "no room" failure."""
        nonlocal writing, no_room
        if writing is None:
            return
        try:
            await writing
        except OSError as error:
            if not is_no_room(error):
                raise
            no_room = error
        finally:
            writing = None

    try:
        async for body in body_parts(request, receive, limit=limit, too_large=too_large):
            total += len(body)
            if no_room is not None:
                continue  # dropped: the upload is refused once its body has ended
            batch.append(body)
            batch_bytes += len(body)
            if batch_bytes >= CHUNK_BYTES:
                await settle()
                if no_room is None:
                    writing = asyncio.ensure_future(asyncio.to_thread(spool.write, batch))
                batch, batch_bytes = [], 0
        await settle()
        if batch and no_room is None:
            writing = asyncio.ensure_future(asyncio.to_thread(spool.write, batch))
            await settle()
    finally:
        if writing is not None:  # a refusal while a batch was being written: let it finish
            await asyncio.gather(writing, return_exceptions=True)
    if no_room is not None:
        raise no_room
    if declared is not None and total != declared:
        raise ProtocolError(
            ErrorCode.MALFORMED,
            f"the body has {total} bytes, Content-Length said {declared}",
            requirement="wire§1",
        )
    return total


async def put(exchange: Exchange) -> None:
    """201 ``{"digest", "size"}`` when stored, 200 when it already was (wire.md §4)."""
    request, storage = exchange.request, exchange.storage
    if not (request.header("content-type") or "").strip():
        raise _unsupported_media_type()
    limit = settings.MWP_ARTIFACT_MAX_BYTES
    declared = request.content_length()
    if declared is not None and declared > limit:
        raise too_large(limit)  # at once, without reading a byte of the body
    spool = await asyncio.to_thread(storage.spool)
    try:
        size = await _receive_into(request, exchange.receive, spool, limit=limit, declared=declared)
        actual = await asyncio.to_thread(spool.finish)
        if actual != request.digest:
            raise hash_mismatch(request.digest, actual)
        stored = await _record(
            storage=storage, spool=spool, digest=request.digest, principal=exchange.principal
        )
    finally:
        await asyncio.to_thread(spool.discard)
    await exchange.responder.json(
        201 if stored.created else 200, {"digest": request.digest, "size": size}
    )
