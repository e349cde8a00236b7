"""``POST /presence``: an agent reports its current capacity (R11.1-11; wire.md §4)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.registry.presence import report_presence
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.presence import validate_presence

from .. import schema
from ..authentication import require_caller


class PresenceApi(APIView):
    """Only an agent has Presence: a person's token is 403 ``FORBIDDEN``. The body is checked
    first, so a malformed one is 400 whoever sends it (wire.md §1: a closed body)."""

    @extend_schema(
        request=schema.PresenceRequestSerializer,
        responses={200: schema.PresenceSerializer, **schema.errors(400, 401, 403, 413, 415)},
        summary="Report this agent's current capacity: free slots and resources (R11.1-11)",
    )
    def post(self, request: Request) -> Response:
        caller = require_caller(request)
        validate_presence(request.data)
        if caller.kind != "agent":
            raise ProtocolError(
                ErrorCode.FORBIDDEN, "only an agent reports presence", requirement="R11.1-11"
            )
        return Response(report_presence(caller.principal.removeprefix("agent:"), request.data))
