"""``GET /groups/{g}/artifacts/{digest}``: an artifact's provenance in one group (R13.1-04).

The bytes themselves are served by ``apps.artifacts`` (``PUT/GET /artifacts/{digest}``), an
ASGI handler that streams them; this is the log's account of them.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger import selectors
from apps.work.provenance import artifact_provenance

from .. import schema
from ..authentication import require_caller


class ArtifactProvenanceApi(APIView):
    @extend_schema(
        parameters=[
            schema.GROUP,
            OpenApiParameter("digest", str, OpenApiParameter.PATH, description="sha256:<hex>"),
        ],
        responses={200: schema.ProvenanceSerializer, **schema.errors(401, 403, 404)},
        summary="An artifact's manifest, sources, derived artifacts and citations in a group",
    )
    def get(self, request: Request, group: str, digest: str) -> Response:
        caller = require_caller(request)
        selectors.access_group(group, caller.principal)
        return Response(artifact_provenance(group, digest))
