"""Every refusal rendered in the wire.md §8 shape, whatever raised it."""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import DisallowedHost, PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response

from apps.artifacts.http import RETRY_AFTER_S, unavailable
from missionweave.protocol.errors import ErrorCode, ProtocolError

logger = logging.getLogger(__name__)

_DRF_CODES: list[tuple[type[Exception], ErrorCode, str]] = [
    (drf.UnsupportedMediaType, ErrorCode.UNSUPPORTED_MEDIA_TYPE, "wire§1"),
    (drf.MethodNotAllowed, ErrorCode.METHOD_NOT_ALLOWED, "wire§4"),
    (drf.NotFound, ErrorCode.NOT_FOUND, "wire§4"),
    (drf.NotAuthenticated, ErrorCode.UNAUTHENTICATED, "wire§4"),
    (drf.AuthenticationFailed, ErrorCode.UNAUTHENTICATED, "wire§4"),
    (drf.PermissionDenied, ErrorCode.FORBIDDEN, "wire§4"),
    (drf.Throttled, ErrorCode.RATE_LIMITED, "wire§8"),
    (drf.ParseError, ErrorCode.MALFORMED, "wire§1"),
    (drf.ValidationError, ErrorCode.MALFORMED, "wire§1"),
    (drf.NotAcceptable, ErrorCode.MALFORMED, "wire§1"),
]


def as_protocol_error(exc: Exception) -> ProtocolError | None:
    """The ``ProtocolError`` for a known exception, ``None`` for a bug."""
    if isinstance(exc, ProtocolError):
        return exc
    if isinstance(exc, Http404):
        return ProtocolError(ErrorCode.NOT_FOUND, "not found", requirement="wire§4")
    if isinstance(exc, PermissionDenied):
        return ProtocolError(ErrorCode.FORBIDDEN, "forbidden", requirement="wire§4")
    for kind, code, requirement in _DRF_CODES:
        if isinstance(exc, kind):
            return ProtocolError(code, str(getattr(exc, "detail", exc)), requirement=requirement)
    return None


#: what PostgreSQL being away raises — the connection could not be made or was cut. Not the
#: request's fault and not a bug: the answer is 503 with ``Retry-After`` (issue 16 §8), and
#: the client sends the same envelope again (wire.md §3 step 5 makes that safe).
DATABASE_OUTAGES = (OperationalError, InterfaceError)
UNAVAILABLE_HEADERS = {"Retry-After": RETRY_AFTER_S}


def database_unavailable(path: str) -> JsonResponse:
    """The 503 document for a request under ``/api/`` that the database could not serve."""
    logger.warning("database unavailable at %s", path, exc_info=True)
    return JsonResponse(unavailable("database").as_body(), status=503, headers=UNAVAILABLE_HEADERS)


def exception_handler(exc: Exception, context: dict[str, Any]) -> HttpResponse | None:
    """DRF's hook: known errors become wire.md §8 documents; the database away is 503;
    anything else is a bug (500)."""
    if isinstance(exc, DATABASE_OUTAGES):
        return database_unavailable(context["request"].path)
    error = as_protocol_error(exc)
    if error is None:
        logger.exception("unhandled error in %s", context.get("view"))
        error = ProtocolError(ErrorCode.INTERNAL, "internal error", requirement="wire§8")
    return Response(error.as_body(), status=error.status)


def error_response(error: ProtocolError) -> JsonResponse:
    """A plain Django response for errors raised outside DRF views."""
    return JsonResponse(error.as_body(), status=error.status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: what Django answers for a request it refuses before any view runs —
    a ``Host`` outside ``ALLOWED_HOSTS``, another suspicious request. Under ``/api/`` that is
    the wire.md §8 document, as the command edge answers (issue 16 §3); elsewhere the
    dashboard's styled page (``templates/400.html``)."""
    if not request.path.startswith("/api/"):
        return defaults.bad_request(request, exception)
    message = (
        "the Host header is not one this server answers for"
        if isinstance(exception, DisallowedHost)
        else "the request was refused before it reached the API"
    )
    return error_response(ProtocolError(ErrorCode.MALFORMED, message, requirement="wire§8"))


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: an exception no view or middleware answered. When it is the database
    being away (a session read, an authentication, a dashboard query) the answer is 503 with
    ``Retry-After`` — the §8 document under ``/api/``, ``templates/503.html`` elsewhere —
    rendered without a request context, since anything that reads the session would fail
    again. Anything else is what Django answers: its 500 page (made JSON under ``/api/`` by
    :class:`~apps.api.middleware.ApiErrorMiddleware` where that is outside it)."""
    error = sys.exc_info()[1]
    if not isinstance(error, DATABASE_OUTAGES):
        if request.path.startswith("/api/"):
            internal = ProtocolError(ErrorCode.INTERNAL, "internal error", requirement="wire§8")
            return error_response(internal)
        return defaults.server_error(request)
    if request.path.startswith("/api/"):
        return database_unavailable(request.path)
    logger.warning("database unavailable at %s", request.path, exc_info=True)
    page = loader.get_template("503.html").render()
    return HttpResponse(page, status=503, headers=UNAVAILABLE_HEADERS)
