"""The artifact endpoints as a raw ASGI application, mounted ahead of Django.

Django's ASGI handler (and daphne) read a whole request body before the view runs; an
artifact upload is up to 100 MiB and must be refused before its body is read (401 without a
token, 413 for a declared length over the limit), so ``/api/v1/artifacts/`` is answered
here, from the ``http.request`` messages as they arrive (uvicorn streams them). Everything
else goes to the inner application unchanged (:func:`mount_artifacts`).

The edge never answers with a traceback: a refusal is its wire.md §8 document, a storage or
database outage is 503 ``UNAVAILABLE`` with ``Retry-After``, an upload the store has no room
for is 507 ``STORAGE_FULL`` with nothing of it kept (issue 16 §8), and anything else is
logged and answered 500 ``INTERNAL`` like the rest of the API.
"""

from __future__ import annotations

import logging

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.db import DatabaseError

from apps.registry.services import authenticate_bearer
from missionweave.protocol.canonical import is_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError

from . import downloads, uploads
from .http import (
    RETRY_AFTER_S,
    ClientGone,
    Exchange,
    Receive,
    Request,
    Responder,
    Scope,
    Send,
    refuse,
    storage_full,
    unavailable,
)
from .storage import configured_storage, is_no_room

logger = logging.getLogger(__name__)

PREFIX = "/api/v1/artifacts/"
ALLOWED = ("GET", "HEAD", "PUT")


def _principal(authorization: str | None) -> str:
    """wire.md §4: a known bearer token, not that of a replaced session."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ProtocolError(ErrorCode.UNAUTHENTICATED, "expected Authorization: Bearer <token>")
    return authenticate_bearer(token.strip()).caller.principal


_authenticate = database_sync_to_async(_principal)


class ArtifactApp:
    """``PUT``, ``GET`` and ``HEAD`` of ``/api/v1/artifacts/{digest}``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        responder = Responder(send, head=scope["method"] == "HEAD")
        request: Request | None = None
        try:
            # Each request's database calls run in a thread of its own, as Django's ASGI
            # handler arranges for its views, so one slow request does not queue the others.
            async with ThreadSensitiveContext():
                request = Request(scope, scope["path"].removeprefix(PREFIX))
                await self._serve(request, receive, responder)
        except ClientGone:
            return  # nothing kept (the upload's spool is gone), nobody to answer
        except ProtocolError as error:
            await refuse(responder, request, error)
        except (OSError, DatabaseError) as error:
            if isinstance(error, OSError) and is_no_room(error):
                # the upload's spool is already discarded: nothing half-written is left
                logger.warning("artifact storage full at %s", scope.get("path"), exc_info=True)
                await refuse(responder, request, storage_full())
                return
            logger.exception("artifact storage or database unavailable")
            await refuse(
                responder,
                request,
                unavailable("storage"),
                status=503,
                headers=[("retry-after", RETRY_AFTER_S)],
            )
        except Exception:
            logger.exception("unhandled error at %s", scope.get("path"))
            await refuse(
                responder,
                request,
                ProtocolError(ErrorCode.INTERNAL, "internal error", requirement="wire§8"),
            )

    async def _serve(self, request: Request, receive: Receive, responder: Responder) -> None:
        # wire.md §1: paths are exact, a trailing slash is 404.
        if not is_digest(request.digest):
            raise ProtocolError(ErrorCode.NOT_FOUND, "not found", requirement="wire§4")
        if request.method not in ALLOWED:
            await responder.error(
                ProtocolError(
                    ErrorCode.METHOD_NOT_ALLOWED,
                    f"{request.method} is not allowed here",
                    requirement="wire§4",
                ),
                headers=[("allow", ", ".join(ALLOWED))],
                close=request.must_close_unread,
            )
            return
        # Before a byte of the body is read (wire.md §3 step 1, §4).
        principal = await _authenticate(request.header("authorization"))
        exchange = Exchange(request, principal, receive, responder, configured_storage())
        if request.method == "PUT":
            await uploads.put(exchange)
        else:
            await downloads.get(exchange)


class ArtifactsMount:
    """Sends ``/api/v1/artifacts/…`` to :class:`ArtifactApp`, everything else to ``inner``."""

    def __init__(self, inner: object, artifacts: ArtifactApp | None = None) -> None:
        self.inner = inner
        self.artifacts = artifacts or ArtifactApp()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "").startswith(PREFIX):
            await self.artifacts(scope, receive, send)
        else:
            await self.inner(scope, receive, send)  # type: ignore[operator]


def mount_artifacts(inner: object) -> ArtifactsMount:
    return ArtifactsMount(inner)
