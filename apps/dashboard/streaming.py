"""A download streamed by a sync view, served in the way its server serves (issue 34 §7).

Django streams a ``StreamingHttpResponse`` under ASGI only from an asynchronous iterator:
given a synchronous one it warns ("StreamingHttpResponse must consume synchronous iterators
in order to serve them asynchronously") and first reads the whole body into memory — a
group's export, or a large artifact, in one piece. Under WSGI (and the test client) it is
the other way round. So a view hands its chunks to :func:`streamed`, which keeps them
synchronous for a WSGI request and, for an ASGI one, pulls them one at a time in the
request's own thread (``thread_sensitive``: the export reads the database with the view's
connection; the artifact reads its storage) and passes each on as it comes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

_DONE = object()


def _next(chunks: Iterator[bytes]) -> object:
    return next(chunks, _DONE)


class _Pulled:
    """``chunks`` as an asynchronous iterator; ``close`` is the source's (Django calls it
    when the response ends, sent in full or not)."""

    def __init__(self, source: Iterable[bytes]) -> None:
        self._source = source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = iter(self._source)
        step = sync_to_async(_next, thread_sensitive=True)
        while (chunk := await step(chunks)) is not _DONE:
            yield chunk  # type: ignore[misc]

    def close(self) -> None:
        close = getattr(self._source, "close", None)
        if close is not None:
            close()


def streamed(request: HttpRequest, chunks: Iterable[bytes]) -> Iterable[bytes] | _Pulled:
    """The body to give ``StreamingHttpResponse`` for ``request``."""
    return _Pulled(chunks) if isinstance(request, ASGIRequest) else chunks
