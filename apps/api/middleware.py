"""Errors outside DRF views (an unknown path, a trailing slash) keep the wire.md §8 shape."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from missionweave.protocol.errors import ErrorCode, ProtocolError

from .errors import DATABASE_OUTAGES, as_protocol_error, database_unavailable, error_response

logger = logging.getLogger(__name__)
API_PREFIX = "/api/"


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
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
