"""``POST /capabilities:check``: is this capability token valid now (R11.5-05)?"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger.capabilities import check_token

from .. import schema
from ..authentication import require_caller


class CapabilityCheckApi(APIView):
    """Any authenticated principal (a tool service, an agent) may ask; the answer is 200
    either way, ``valid`` saying which, with the wire code and R-ID of the first failed rule
    (R11.3-05..09). Only a malformed body is an error (400 ``MALFORMED``)."""

    @extend_schema(
        request=schema.CapabilityCheckRequestSerializer,
        responses={200: schema.CapabilityCheckSerializer, **schema.errors(400, 401, 413, 415)},
        summary="Check a capability token against its lease, now (R11.3-06..08, R11.5-05)",
    )
    def post(self, request: Request) -> Response:
        require_caller(request)
        return Response(check_token(request.data))
