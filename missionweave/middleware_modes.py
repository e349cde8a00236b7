"""Middleware that runs in the request's own mode, so Django never switches a request's
thread back to the event loop (issue 34 §7).

Django adapts a sync-only middleware under ASGI by running it in a thread and the rest of
the chain, inside that thread, through ``async_to_sync``. When the client goes away while
that thread works, asgiref hands the thread's context to the request mid-call, and
Django's ``request_finished`` then meets an executor that has quit: "RuntimeError:
CurrentThreadExecutor already quit or is broken", seen in the demo. With every middleware
able to run asynchronously, only the view runs in a thread and nothing in it waits on the
loop. Under WSGI (the test client, management commands) the same classes run synchronously.

A subclass writes the request's two paths, ``call`` and ``acall``; whatever they share is a
plain function of theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest
from django.http.response import HttpResponseBase

GetResponse = Callable[[HttpRequest], Any]


class DualModeMiddleware:
    """Base for a middleware with a synchronous and an asynchronous path."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self.acall(request)
        return self.call(request)

    def call(self, request: HttpRequest) -> HttpResponseBase:
        raise NotImplementedError

    async def acall(self, request: HttpRequest) -> HttpResponseBase:
        raise NotImplementedError
