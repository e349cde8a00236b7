"""The dashboard's CSS and JS, served by WhiteNoise, read the way the server streams.

WhiteNoise hands Django a ``FileResponse`` over a plain file: a synchronous iterator. Under
ASGI (uvicorn in production, issue 34 §7) Django then warns "StreamingHttpResponse must
consume synchronous iterators" on every static file and reads the file on the event loop's
executor through a per-chunk ``sync_to_async`` it sets up itself. This middleware keeps
WhiteNoise's lookup, headers and conditional answers, and only replaces the body of a file
served to an ASGI request with an asynchronous iterator that reads it in a worker thread.
Under WSGI (the test client, management commands) the response is WhiteNoise's, unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import IO, Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings as django_settings
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpRequest
from whitenoise.middleware import WhiteNoiseMiddleware

#: bytes read per thread hop; the ASGI server chunks what it sends on its own
CHUNK_BYTES = 64 * 1024


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, with an asynchronous body for ASGI requests, and able to run in the
    request's own mode (``missionweave.middleware_modes``): under ASGI the chain after it is
    awaited, never driven from a thread."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any = None, settings: Any = django_settings) -> None:
        super().__init__(get_response, settings=settings)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.acall(request)
        return super().__call__(request)

    async def acall(self, request: HttpRequest) -> Any:
        if self.autorefresh:  # development only: the file system is asked on each request
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is None:
            return await self.get_response(request)
        # opening and stat-ing the file: off the event loop
        return await sync_to_async(self.serve, thread_sensitive=False)(static_file, request)

    @staticmethod
    def serve(static_file: Any, request: HttpRequest) -> FileResponse:
        response: FileResponse = WhiteNoiseMiddleware.serve(static_file, request)
        if isinstance(request, ASGIRequest):
            file = getattr(response, "file_to_stream", None)
            # a 304 or a HEAD has no file: WhiteNoise's empty tuple would warn as well
            response.streaming_content = read_in_thread(file) if file else nothing()
        return response


async def nothing() -> AsyncIterator[bytes]:
    """An empty body, as an asynchronous iterator."""
    for chunk in ():
        yield chunk


async def read_in_thread(file: IO[bytes]) -> AsyncIterator[bytes]:
    """The file's bytes, each read off the event loop; the file is closed when the body
    ends or the client goes away (the response also closes it, harmlessly, a second time)."""
    read = sync_to_async(file.read, thread_sensitive=False)
    try:
        while chunk := await read(CHUNK_BYTES):
            yield chunk
    finally:
        file.close()
