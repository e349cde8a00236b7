"""The strict JSON parser of wire.md §1, with the size limit checked before reading."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.parsers import BaseParser

from missionweave.protocol import strictjson
from missionweave.protocol.errors import ErrorCode, ProtocolError


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
        limit = body_limit(parser_context)
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise too_large(limit)
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise too_large(limit)
        return strictjson.parse(data)
