"""The strict JSON parser of wire.md §1, with the size limit checked before reading."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.parsers import BaseParser

from missionweave.protocol import strictjson
from missionweave.protocol.errors import ErrorCode, ProtocolError

JSON_TYPE = "application/json"


def check_json_media_type(content_type: str | None) -> None:
    """wire.md §1: a JSON request body is ``application/json``, with no parameter but an optional
    ``charset=utf-8``; anything else (``*/*``, ``application/*``, another charset, a form,
    no type at all) is 415 ``UNSUPPORTED_MEDIA_TYPE``."""
    media, *parameters = (content_type or "").split(";")
    acceptable = media.strip().lower() == JSON_TYPE and all(
        _is_utf8_charset(parameter) for parameter in parameters
    )
    if not acceptable:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f'Unsupported media type "{content_type or ""}" in request.',
            requirement="wire§1",
        )


def _is_utf8_charset(parameter: str) -> bool:
    name, _, value = parameter.partition("=")
    return name.strip().lower() == "charset" and value.strip().strip('"').lower() == "utf-8"


def body_limit(parser_context: dict[str, Any] | None) -> int:
    """The size limit of the view's body: the setting its ``body_limit_setting`` names, read per
    request (a class attribute holding the value would freeze it at import)."""
    view = (parser_context or {}).get("view")
    return getattr(settings, getattr(view, "body_limit_setting", "MWP_MAX_COMMAND_BYTES"))


def too_large(limit: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.TOO_LARGE,
        f"the body exceeds the limit of {limit} bytes",
        requirement="wire§1",
        details={"limit": limit},
    )


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        check_json_media_type(media_type)
        limit = body_limit(parser_context)
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise too_large(limit)
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise too_large(limit)
        return strictjson.parse(data)
