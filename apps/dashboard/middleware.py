"""Bare error answers of the dashboard's pages, in the dashboard's look.

Django answers some refusals itself with no page at all: a GET to a form's address is a bare
405 (``require_POST``), a malformed query a plain-text 400. A person who follows an old link
deserves the site's styled page with the site's navigation, as for 403, 404 and 500
(``templates/4xx.html``, ``403_csrf.html``). Under ``/api/`` nothing changes: there every
error keeps the wire.md §8 shape (``apps.api.middleware.ApiErrorMiddleware``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

#: the API's paths, where errors are JSON (the dashboard sits beside the API, not on it)
API_PREFIX = "/api/"
#: the statuses Django (or a view) may answer without a page of the dashboard's own
STYLED = {400: "400.html", 405: "405.html"}


def _is_page(response: HttpResponse) -> bool:
    head = response.content[:200].lower()
    return b"<!doctype html" in head or b"<html" in head


class StyledErrorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        template = STYLED.get(response.status_code)
        if (
            template is None
            or request.path.startswith(API_PREFIX)
            or getattr(response, "streaming", False)
            or _is_page(response)
        ):
            return response
        reason = response.content.decode("utf-8", "replace").strip()[:200]
        styled = render(
            request,
            template,
            {"reason": reason, "allowed": response.get("Allow", "")},
            status=response.status_code,
        )
        if response.has_header("Allow"):
            styled["Allow"] = response["Allow"]
        return styled
