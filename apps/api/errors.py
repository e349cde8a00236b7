"""Every refusal rendered in the wire.md §8 shape, whatever raised it."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import DisallowedHost, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response

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


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's hook: known errors become wire.md §8 documents; anything else is a bug (500)."""
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
