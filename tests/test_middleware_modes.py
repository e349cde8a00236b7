"""Every middleware runs in the request's own mode (issue 34 §7): under ASGI Django adapts
none of them, so only a view runs in a thread and nothing in that thread waits on the event
loop — the demo's "CurrentThreadExecutor already quit or is broken" in ``request_finished``
came from a client leaving while a thread drove the rest of the chain through
``async_to_sync``. Under WSGI the same classes answer synchronously, as before."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponse
from django.test import AsyncClient, Client

pytestmark = pytest.mark.django_db(transaction=True)


class SyncOnlyMiddleware:
    """What the four of ours were: sync-capable only (the control of the check below)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)


def adaptations(settings, caplog) -> list[str]:
    settings.DEBUG = True  # Django says which handler it adapted only when debugging
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="django.request"):
        ASGIHandler()
    return [r.getMessage() for r in caplog.records if "adapted" in r.getMessage()]


def test_under_asgi_django_adapts_no_middleware_of_ours(settings, caplog) -> None:
    assert adaptations(settings, caplog) == []


def test_the_check_sees_a_sync_only_middleware(settings, caplog) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.SyncOnlyMiddleware"]
    assert adaptations(settings, caplog) != []


def test_each_middleware_still_does_its_job_in_both_modes() -> None:
    """The API's 404 keeps the wire.md §8 body; a dashboard GET to a POST-only address gets
    the styled 405 page; a static file is served — through the test client (WSGI) and the
    async client (ASGI) alike."""
    paths = ("/api/v1/no-such-thing", "/static/dashboard/stream.js", "/logout/")
    answered_sync = [Client().get(path) for path in paths]

    async def answer_async() -> list[HttpResponse]:
        client = AsyncClient()
        return [await client.get(path) for path in paths]

    for api, static, styled in (answered_sync, asyncio.run(answer_async())):
        assert api.status_code == 404
        assert api.json()["error"]["code"] == "NOT_FOUND"
        assert static.status_code == 200
        assert styled.status_code == 405
        assert b"<!doctype html" in styled.content[:200].lower()
