"""Admin endpoints (wire.md §4): a staff user's API token; anything else is FORBIDDEN."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger import selectors
from apps.registry import services
from apps.stream.cursors import group_cursors
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.validation import malformed

from .. import schema
from ..authentication import require_staff

ADMIN_ERRORS = schema.errors(400, 401, 403, 404, 409, 413, 415)


def _object(data: object) -> dict:
    if not isinstance(data, dict):
        raise malformed("the body is a JSON object", "$", "wire§4")
    return data


class OrganizationCreateApi(APIView):
    @extend_schema(
        request=schema.OrganizationSerializer,
        responses={
            201: schema.OrganizationSerializer,
            200: schema.OrganizationSerializer,
            **ADMIN_ERRORS,
        },
        summary="Create an organisation",
    )
    def post(self, request: Request) -> Response:
        require_staff(request)
        organization, created = services.organization_create(body=_object(request.data))
        return Response(organization.as_wire(), status=201 if created else 200)


class AgentCreateApi(APIView):
    @extend_schema(
        request=schema.AgentRequestSerializer,
        responses={201: schema.AgentSerializer, 200: schema.AgentSerializer, **ADMIN_ERRORS},
        summary="Register an agent (or add a key / Agent Card version to it)",
    )
    def post(self, request: Request) -> Response:
        require_staff(request)
        agent, created = services.agent_register(body=_object(request.data))
        return Response(agent.as_wire(), status=201 if created else 200)


class GroupCreateApi(APIView):
    @extend_schema(
        request=schema.GroupRequestSerializer,
        responses={
            201: schema.GroupRequestSerializer,
            200: schema.GroupRequestSerializer,
            **ADMIN_ERRORS,
        },
        summary="Create a group (its log starts empty)",
    )
    def post(self, request: Request) -> Response:
        require_staff(request)
        group, created = services.group_create(body=_object(request.data))
        return Response(group.as_wire(), status=201 if created else 200)


class MembershipGrantApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP],
        request=schema.MembershipRequestSerializer,
        responses={
            201: schema.MembershipSerializer,
            200: schema.MembershipSerializer,
            **ADMIN_ERRORS,
        },
        summary="Grant roles, or replace an existing member's roles",
    )
    def post(self, request: Request, group: str) -> Response:
        admin = require_staff(request)
        outcome = services.membership_grant(group_id=group, admin=admin, body=request.data)
        return Response(outcome.body["result"], status=outcome.status)


class MembershipRevokeApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, OpenApiParameter("principal", str, OpenApiParameter.PATH)],
        request=None,
        responses={200: schema.MembershipRevokedSerializer, **schema.errors(401, 403, 404)},
        summary="Revoke a principal's membership",
    )
    def delete(self, request: Request, group: str, principal: str) -> Response:
        admin = require_staff(request)
        outcome = services.membership_revoke(group_id=group, admin=admin, principal=principal)
        return Response(outcome.body["result"], status=outcome.status)


class GroupCursorsApi(APIView):
    """Read-only view of the ACK cursors (wire.md §7, R16-06, R16-08): staff only."""

    @extend_schema(
        parameters=[schema.GROUP],
        responses={200: schema.GroupCursorsSerializer, **schema.errors(401, 403, 404)},
        summary="The group's ACK cursors and how far each is behind the head",
    )
    def get(self, request: Request, group: str) -> Response:
        require_staff(request)
        selectors.group_log(group)
        head, cursors = group_cursors(group)
        return Response(
            {
                "group": group,
                "head": head,
                "cursors": [
                    {
                        "principal": row.principal,
                        "sequence": row.sequence,
                        "lag": row.lag,
                        "updated_at": format_timestamp(row.updated_at),
                    }
                    for row in cursors
                ],
            }
        )
