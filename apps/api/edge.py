"""The hot endpoints as a raw ASGI application, answered ahead of Django's stack.

``POST /api/v1/groups/{group}/commands`` (and ``commands:batch``) is the protocol's hot path,
``GET /api/v1/groups/{group}/events`` its replay and catch-up. Through Django's ASGI
handler a request pays a thread per request, the whole middleware chain, DRF's request and
negotiation: about 8 ms of CPU on this machine kind against ~3 ms for the write path itself
(docs/benchmarks.md, issue 15). Here the request is answered from its ``http.request``
messages with exactly what those layers did for it:

- the ``Host`` is checked against ``ALLOWED_HOSTS`` (``MALFORMED`` 400, a §8 document);
- the bearer token is judged from the headers, then the media type (``parsers``) and the
  declared ``Content-Length``, all before a byte of the body is read (wire.md §3 step 1);
- the body is counted as it arrives, a chunked one too, and cut at the limit (413);
- the command or the page read runs on a small pool of threads, which Django's request
  signals would have run it between (``close_old_connections``);
- an agent's session token, once judged, is judged from memory (``SessionCallers``) and its
  session checked again in the round trip that does the work;
- the answer carries the headers Django's security middleware and DRF would have set.

What the endpoints decide is :mod:`apps.api.answers` and the write path, shared with the DRF
views, which still answer the same paths under Django's test client and document them in
the OpenAPI schema. Any other request, and every request when HTTPS redirection applies, goes
to the inner application unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from channels.db import DatabaseSyncToAsync
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.http import QueryDict

from apps.artifacts.http import (
    RETRY_AFTER_S,
    ClientGone,
    Receive,
    Request,
    Responder,
    Scope,
    Send,
    body_parts,
    refuse,
    unavailable,
)
from apps.ledger.selectors import (
    DEFAULT_PAGE,
    EventPage,
    clamped_limit,
    events_page,
    readable_page,
)
from apps.ledger.write_path import Caller, submit_command
from apps.registry.services import (
    Authenticated,
    authenticate_bearer,
)
from missionweave.protocol import strictjson
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .answers import batch_document, events_body, outcome_headers, query_int
from .django_checks import bearer_token, check_host, is_secure, security_headers
from .next_pages import NextPages, PageKey, served_ahead
from .parsers import check_json_media_type, too_large
from .session_callers import SessionCallers

logger = logging.getLogger(__name__)

#: wire.md §1 ids, as the URL converter ``wid`` matches them; anything else is Django's 404
EDGE_PATH = re.compile(r"/api/v1/groups/([A-Za-z0-9._:-]{1,128})/(commands(?::batch)?|events)")
#: the method each endpoint answers here (others, HEAD and OPTIONS included, go to Django)
METHODS = {"commands": "POST", "commands:batch": "POST", "events": "GET"}
#: what DRF's ``Allow`` header says for each endpoint's view
ALLOW = {
    "commands": "POST, OPTIONS",
    "commands:batch": "POST, OPTIONS",
    "events": "GET, HEAD, OPTIONS",
}
#: threads answering commands per process; each holds at most one database connection
EDGE_THREADS = 8
#: the page size of a request's checks when its page was read ahead (``next_pages``)
PROBE = 1


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)


class CommandEdge:
    """Answers the command and events endpoints; sends everything else to ``inner``."""

    def __init__(self, inner: Callable[..., Any], *, threads: int = EDGE_THREADS) -> None:
        self.inner = inner
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mwp-edge")
        #: read and written on the event loop's thread only
        self._sessions = SessionCallers()
        #: read and written on the event loop's thread only
        self._next_pages = NextPages()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _edge_path(scope)
        if match is None:
            await self.inner(scope, receive, send)
            return
        group, endpoint = match
        request = Request(scope, "")
        responder = Responder(send, head=False)
        security = security_headers(secure=is_secure(scope))
        try:
            reply = await self._answer(request, receive, group, endpoint)
            await responder.start(
                reply.status,
                [
                    ("content-type", "application/json"),
                    ("content-length", str(len(reply.body))),
                    ("allow", ALLOW[endpoint]),
                    *reply.headers,
                    *security,
                ],
            )
            await responder.body(reply.body)
        except ClientGone:
            return
        except ProtocolError as error:
            await refuse(responder, request, error, headers=security)
        except DatabaseError:
            logger.exception("database unavailable at %s", scope["path"])
            await refuse(
                responder,
                request,
                unavailable("database"),
                status=503,
                headers=[("retry-after", RETRY_AFTER_S), *security],
            )
        except Exception:
            logger.exception("unhandled error at %s", scope["path"])
            await refuse(
                responder,
                request,
                ProtocolError(ErrorCode.INTERNAL, "internal error", requirement="wire§8"),
                headers=security,
            )

    async def _answer(self, request: Request, receive: Receive, group: str, endpoint: str) -> Reply:
        """The answer, judged in wire.md §3's order: host, token, media type, length, body."""
        check_host(request)
        token = bearer_token(request.header("authorization"))
        if endpoint == "events":
            return await self._events(request, token, group)
        # A batch judges its token in PostgreSQL: a replaced session's batch is one 401, as
        # through Django's stack, not 200 with each item refused under the lock.
        caller = self._sessions.get(token) if endpoint == "commands" else None
        if caller is None:
            authenticated = await self._run(authenticate_bearer, token)
            self._sessions.remember(token, authenticated)
            caller = authenticated.caller
        check_json_media_type(request.header("content-type"))
        limit = (
            settings.MWP_MAX_COMMAND_BYTES
            if endpoint == "commands"
            else settings.MWP_MAX_BATCH_BYTES
        )
        declared = request.content_length()
        if declared is not None and declared > limit:
            raise too_large(limit)
        data = strictjson.parse(await _read_body(request, receive, limit=limit))
        if endpoint == "commands":
            outcome = await self._run(
                partial(submit_command, group_id=group, document=data, caller=caller)
            )
            return Reply(
                outcome.status,
                _encoded(outcome.body),
                [(name.lower(), value) for name, value in outcome_headers(outcome).items()],
            )
        return Reply(200, _encoded(await self._run(batch_document, group, data, caller)))

    async def _events(self, request: Request, token: str, group: str) -> Reply:
        """``GET …/events``: the token (unless remembered), the membership, the session and
        the page in one thread hop and, on PostgreSQL, two round trips at most. A page read
        ahead for this request (``next_pages``) is answered after the same checks, made now
        on a page of one event; a full answer that ends before the head starts the next."""
        query = _query(request.scope)
        remembered = self._sessions.get(token)
        key = _page_key(token, group, query)
        ahead = self._next_pages.take(key) if key is not None else None
        judged: Authenticated | None = None
        page: EventPage | None = None
        if ahead is not None and key is not None:
            judged, probe = await self._run(_events_page, token, remembered, group, query, PROBE)
            with contextlib.suppress(Exception):  # a failed read is read afresh (served_ahead)
                await asyncio.wrap_future(ahead)
            page = served_ahead(ahead, probe, key)
        if page is None:
            caller = judged.caller if judged is not None else remembered
            fresh, page = await self._run(_events_page, token, caller, group, query)
            judged = judged or fresh
        if judged is not None:
            self._sessions.remember(token, judged)
        if key is not None and len(page.documents) == key.limit and page.next_after < page.head:
            following = PageKey(token, group, page.next_after, key.limit)
            self._next_pages.offer(following, partial(self._read_ahead, following, page.head))
        return Reply(200, events_body(page))

    def _read_ahead(self, key: PageKey, head: int) -> Future[EventPage]:
        """``key``'s page up to ``head`` on one of the edge's threads: no checks, it is only
        served after the request's own (``next_pages``)."""
        read = partial(events_page, key.group, after=key.after, limit=key.limit, head=head)
        return self._pool.submit(_between_connection_checks, read)

    async def _run[T](self, function: Callable[..., T], *args: Any) -> T:
        """``function`` on one of the edge's threads, between the connection checks Django
        runs at the start and end of every request (channels' ``DatabaseSyncToAsync``)."""
        call = DatabaseSyncToAsync(function, thread_sensitive=False, executor=self._pool)
        return await call(*args)


def _edge_path(scope: Scope) -> tuple[str, str] | None:
    """``(group, endpoint)`` for a request this edge answers, else ``None``."""
    if scope["type"] != "http":
        return None
    match = EDGE_PATH.fullmatch(scope.get("path", ""))
    if match is None or METHODS[match[2]] != scope.get("method"):
        return None
    if settings.SECURE_SSL_REDIRECT and not is_secure(scope):
        return None  # SecurityMiddleware redirects it to HTTPS: let Django answer
    return match[1], match[2]


async def _read_body(request: Request, receive: Receive, *, limit: int) -> bytes:
    """The whole body, counted as it arrives and cut at ``limit`` (``body_parts``)."""
    return b"".join(
        [part async for part in body_parts(request, receive, limit=limit, too_large=too_large)]
    )


def _encoded(document: Any) -> bytes:
    """JSON as DRF's ``JSONRenderer`` writes it with this project's settings: compact, UTF-8,
    no NaN."""
    text = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")


def _query(scope: Scope) -> QueryDict:
    """The query string as Django parses it (the last of repeated names wins in ``get``)."""
    try:
        return QueryDict(scope.get("query_string", b"").decode("utf-8"))
    except UnicodeDecodeError:
        raise ProtocolError(
            ErrorCode.MALFORMED, "the query string is not UTF-8", requirement="wire§1"
        ) from None


def _page_key(token: str, group: str, query: QueryDict) -> PageKey | None:
    """The key of a page read ahead for this request, or ``None`` when its query is not
    one a page is read for (a bad query is refused by ``_events_page``, in its order)."""
    try:
        after, limit = _after_and_limit(query)
    except ProtocolError:
        return None
    return PageKey(token, group, after, clamped_limit(limit))


def _after_and_limit(query: QueryDict) -> tuple[int, int]:
    """``after`` and ``limit`` of an events query (wire.md §1 counts), as asked."""
    return (
        query_int(query.get("after"), "after", 0),
        query_int(query.get("limit"), "limit", DEFAULT_PAGE),
    )


def _between_connection_checks[T](read: Callable[[], T]) -> T:
    """``read`` between the connection checks of a request (as ``CommandEdge._run``)."""
    close_old_connections()
    try:
        return read()
    finally:
        close_old_connections()


def _events_page(
    token: str,
    remembered: Caller | None,
    group: str,
    query: QueryDict,
    page_size: int | None = None,
) -> tuple[Authenticated | None, EventPage]:
    """On an edge thread: judge the token unless ``remembered``, then the page. A remembered
    token's session is checked in the page's round trip (``readable_page``). ``page_size``
    reads that many events instead of the query's ``limit``: the checks of a page read
    ahead, which refuse exactly as the whole page's read would."""
    authenticated: Authenticated | None = None
    if remembered is None:
        authenticated = authenticate_bearer(token)
        caller = authenticated.caller
    else:
        caller = remembered
    try:
        after, limit = _after_and_limit(query)
    except ProtocolError:
        if remembered is not None:
            authenticate_bearer(token)  # a replaced session's 401 comes before a bad query
        raise
    session = None
    if remembered is not None and caller.kind == "agent" and caller.session_epoch is not None:
        session = (caller.principal.partition(":")[2], caller.session_epoch)
    page = readable_page(
        group, caller.principal, after=after, limit=page_size or limit, session=session
    )
    return authenticated, page
