"""Errors outside DRF views (an unknown path, a trailing slash) keep the wire.md §8 shape."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

from missionweave.middleware_modes import DualModeMiddleware
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .errors import DATABASE_OUTAGES, as_protocol_error, database_unavailable, error_response

logger = logging.getLogger(__name__)
API_PREFIX = "/api/"


class ApiErrorMiddleware(DualModeMiddleware):
    def call(self, request: HttpRequest) -> HttpResponseBase:
        return _in_wire_shape(request, self.get_response(request))

    async def acall(self, request: HttpRequest) -> HttpResponseBase:
        return _in_wire_shape(request, await self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, DATABASE_OUTAGES):
            return database_unavailable(request.path)
        error = as_protocol_error(exception)
        if error is None:
            logger.exception("unhandled error at %s", request.path)
            error = ProtocolError(ErrorCode.INTERNAL, "internal error", requirement="wire§8")
        return error_response(error)


def _in_wire_shape(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """An API error answered without the wire.md §8 body (Django's own 404, 405, 413…)
    given it; anything else unchanged. Pure: no database, no I/O."""
    if not request.path.startswith(API_PREFIX) or response.status_code < 400:
        return response
    if response.get("Content-Type", "").startswith("application/json"):
        return response
    code = {
        404: ErrorCode.NOT_FOUND,
        405: ErrorCode.METHOD_NOT_ALLOWED,
        413: ErrorCode.TOO_LARGE,
        415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    }.get(response.status_code)
    if code is None:
        code = ErrorCode.INTERNAL if response.status_code >= 500 else ErrorCode.MALFORMED
    return error_response(ProtocolError(code, response.reason_phrase or code.value))
