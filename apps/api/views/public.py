"""``/authority``, ``/sessions`` and ``/sessions/current`` (wire.md §4, §5)."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from django.utils.csp import CSP
from django.utils.decorators import method_decorator
from django.views.decorators.csp import csp_override
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger import authority
from apps.registry import services
from apps.work import sessions
from missionweave.protocol.timefmt import format_timestamp

from .. import schema
from ..authentication import require_caller


class AuthorityApi(APIView):
    authentication_classes = ()

    @extend_schema(
        responses={200: schema.AuthoritySerializer}, summary="The authority's identity and clock"
    )
    def get(self, request: Request) -> Response:
        return Response(
            {
                "authority_id": authority.authority_id(),
                "public_key": authority.public_key(),
                "protocol": "mwp/1",
                "time": format_timestamp(timezone.now()),
                "clock_skew_s": settings.MWP_CLOCK_SKEW_S,
            }
        )


class SessionCreateApi(APIView):
    authentication_classes = ()

    @extend_schema(
        request=schema.SessionRequestSerializer,
        responses={201: schema.SessionSerializer, **schema.errors(400, 401, 413, 415)},
        summary="Open an agent session (signed body; raises the session epoch)",
    )
    def post(self, request: Request) -> Response:
        opened = sessions.session_open(body=request.data)
        return Response(services.session_document(opened.session, opened.token), status=201)


class SessionCurrentApi(APIView):
    @extend_schema(
        responses={200: schema.CURRENT_SESSION, **schema.errors(401)},
        summary="The caller's current session (agent) or principal and memberships (human)",
    )
    def get(self, request: Request) -> Response:
        caller = require_caller(request)
        if caller.kind == "agent":
            token = request.META["HTTP_AUTHORIZATION"].partition(" ")[2].strip()
            return Response(services.session_document(request.auth.session, token))
        return Response(
            {
                "principal": caller.principal,
                "memberships": services.memberships_of(caller.principal),
            }
        )


#: the dashboard's policy (settings.SECURE_CSP) but for styles and images: the Swagger UI page
#: has an inline stylesheet of drf-spectacular's template, Swagger UI draws with inline
#: styles, and its stylesheet's icons are ``data:`` images
DOCS_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}


@method_decorator(csp_override(DOCS_CSP), name="dispatch")
class SchemaDocs(SpectacularSwaggerSplitView):
    """``GET /docs``: ``GET /schema`` in Swagger UI, its scripts and styles served by this app
    (``drf-spectacular-sidecar``: no CDN, so it works offline and leaks no visit). An HTML page
    for people, not an endpoint of the contract, so it is left out of the document. Its
    starting script is ``GET /docs?script``, not inline, so no script runs that the app
    did not serve as a file (``DOCS_CSP``)."""

    authentication_classes = ()
    exclude_from_schema = True


class SchemaApi(SpectacularJSONAPIView):
    """``GET /schema``: listed in the document it serves, as wire.md §4 asks of every endpoint."""

    authentication_classes = ()

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="This OpenAPI 3 document (JSON)")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)
