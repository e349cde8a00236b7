"""Signed snapshots (wire.md §4, §7; R16-10, R16-11): taken by an admin, read by members;
and the archive, which needs one (R16-08)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger import selectors
from apps.ledger.archive import archive
from apps.ledger.models import Snapshot
from apps.ledger.snapshots import take_as_admin
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.snapshots import url_of
from missionweave.protocol.validation import malformed

from .. import schema
from ..authentication import require_caller, require_staff

#: the largest sequence the log can hold (PositiveBigIntegerField); beyond it nothing exists
_MAX_SEQUENCE = 2**63 - 1


class SnapshotCreateApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP],
        request=schema.EmptyBodySerializer,
        responses={201: schema.SnapshotCreatedSerializer, **schema.errors(400, 401, 403, 404)},
        summary="Snapshot the group at its head S; snapshot.created is appended at S + 1",
    )
    def post(self, request: Request, group: str) -> Response:
        admin = require_staff(request)
        if not isinstance(request.data, dict) or request.data:
            raise malformed("the body is the empty object {}", "$", "wire§4")
        taken = take_as_admin(group, admin)
        return Response(taken.outcome.body["result"], status=201)


class SnapshotDetailApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, OpenApiParameter("sequence", int, OpenApiParameter.PATH)],
        responses={200: schema.SnapshotSerializer, **schema.errors(401, 403, 404)},
        summary="A signed snapshot, byte for byte as signed (wire.md §7)",
    )
    def get(self, request: Request, group: str, sequence: int) -> HttpResponse:
        caller = require_caller(request)
        selectors.access_group(group, caller.principal)
        document = None
        if sequence <= _MAX_SEQUENCE:
            document = (
                Snapshot.objects.filter(group_id=group, sequence=sequence)
                .values_list("document", flat=True)
                .first()
            )
        if document is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"no snapshot of {group} at {sequence}",
                requirement="R16-10",
                details={"url": url_of(group, sequence)},
            )
        return HttpResponse(document.encode("utf-8"), content_type="application/json")


class ArchiveApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP],
        request=schema.ArchiveRequestSerializer,
        responses={200: schema.ArchiveSerializer, **schema.errors(400, 401, 403, 404, 409)},
        summary="Move events with sequence ≤ through from the online log to the archive",
    )
    def post(self, request: Request, group: str) -> Response:
        """wire.md §4, R16-08: history moves to the archive and stays exportable; 409
        ``SNAPSHOT_REQUIRED`` (R16-10) unless a snapshot at ≥ ``through`` exists, so a reader
        left behind can restore one. Idempotent: the answer is the floor after the call."""
        require_staff(request)
        body = request.data
        if not isinstance(body, dict) or set(body) != {"through"}:
            raise malformed('the body is {"through": S}', "$", "wire§4")
        through = body["through"]
        if isinstance(through, bool) or not isinstance(through, int) or through < 0:
            raise malformed("through is a non-negative integer", "$.through", "wire§4")
        floor = archive(group, min(through, _MAX_SEQUENCE))
        return Response({"group": group, "archived_through": floor})
