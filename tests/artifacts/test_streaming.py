"""A large object is verified in a first pass and streamed in a second (R13.1-05): bytes that
change between the passes are caught by the second pass's hash, which holds back the last
chunk, so the client never receives a complete response of them.

The ASGI application runs in this process (the test must act between the two passes), with
the real filesystem storage and database; committed data, as its threads have connections
of their own.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from channels.db import database_sync_to_async

from apps.artifacts.asgi import ArtifactApp
from apps.artifacts.models import CorruptionReport
from apps.artifacts.services import artifact_store
from apps.artifacts.storage import FilesystemStorage, Storage
from missionweave.protocol.canonical import sha256_digest
from tests.factories import World


def _scope(digest: str, token: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "GET",
        "path": f"/api/v1/artifacts/{digest}",
        "headers": [(b"authorization", f"Bearer {token}".encode())],
        "query_string": b"",
    }


async def test_bytes_changed_between_the_passes_never_make_a_complete_response(
    live_world: World, local_storage: Storage, settings: Any
) -> None:
    """R13.1-05: the object is flipped after the first pass verified it and the headers
    went out; the second pass notices, reports it, and the final chunk is never sent."""
    settings.MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES = 64 * 1024
    data = os.urandom(3 * 1024 * 1024)
    digest = sha256_digest(data)
    await database_sync_to_async(artifact_store)(
        principal=live_world.w2.principal, digest=digest, chunks=[data], storage=local_storage
    )
    assert isinstance(local_storage, FilesystemStorage)
    path = local_storage.path(digest)
    messages: list[dict[str, Any]] = []
    never = asyncio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)
        if message["type"] == "http.response.start":
            path.chmod(0o600)
            with path.open("r+b") as file:  # after pass one, before pass two
                file.seek(len(data) - 1)
                file.write(bytes([data[-1] ^ 1]))

    await ArtifactApp()(_scope(digest, live_world.w2.token), receive, send)

    assert messages[0]["status"] == 200
    bodies = messages[1:]
    assert all(message["more_body"] for message in bodies)  # never completed
    assert sum(len(message["body"]) for message in bodies) < len(data)
    report = await database_sync_to_async(CorruptionReport.objects.get)(digest=digest)
    assert report.actual == sha256_digest(data[:-1] + bytes([data[-1] ^ 1]))
