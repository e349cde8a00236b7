"""Bare error answers of the dashboard's pages, in the dashboard's look.

Django answers some refusals itself with no page at all: a GET to a form's address is a bare
405 (``require_POST``), a malformed query a plain-text 400. A person who follows an old link
deserves the site's styled page with the site's navigation, as for 403, 404 and 500
(``templates/4xx.html``, ``403_csrf.html``). Under ``/api/`` nothing changes: there every
error keeps the wire.md §8 shape (``apps.api.middleware.ApiErrorMiddleware``).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from missionweave.middleware_modes import DualModeMiddleware

#: the API's paths, where errors are JSON (the dashboard sits beside the API, not on it)
API_PREFIX = "/api/"
#: the statuses Django (or a view) may answer without a page of the dashboard's own
STYLED = {400: "400.html", 405: "405.html"}


def _is_page(response: HttpResponse) -> bool:
    head = response.content[:200].lower()
    return b"<!doctype html" in head or b"<html" in head


class StyledErrorsMiddleware(DualModeMiddleware):
    def call(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        return _styled(request, response) if _needs_style(request, response) else response

    async def acall(self, request: HttpRequest) -> HttpResponseBase:
        response = await self.get_response(request)
        if not _needs_style(request, response):
            return response
        # rendering reads the person's session and names: in a thread, like a view
        return await sync_to_async(_styled)(request, response)


def _needs_style(request: HttpRequest, response: HttpResponseBase) -> bool:
    return (
        response.status_code in STYLED
        and not request.path.startswith(API_PREFIX)
        and not getattr(response, "streaming", False)
        and not _is_page(response)
    )


def _styled(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    reason = response.content.decode("utf-8", "replace").strip()[:200]
    styled = render(
        request,
        STYLED[response.status_code],
        {"reason": reason, "allowed": response.get("Allow", "")},
        status=response.status_code,
    )
    if response.has_header("Allow"):
        styled["Allow"] = response["Allow"]
    return styled
