"""Context packages (R13.3): a package as recorded in a group, and the events it cites.

A package published in a group is read at ``/groups/{g}/contexts/{id}``; one forwarded to it
from another group at ``/groups/{g}/contexts/{from_group}/{id}`` (the aggregate's key, so a
group's own package and a forwarded one of the same id stay apart). ``/groups/{g}/contexts``
lists them, optionally those in one mission's (or WorkItem's) context only: what a worker
hands its handler (issue 35 §7). Both need membership of
``g``. The events a version cites are in its *source* group's log, so reading them needs
membership there too (R13.3-03): forwarding a summary does not open the history behind it.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger import selectors
from apps.work.selectors import context_package, context_packages
from missionweave.protocol.context import ContextPackage
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.validation import check_id

from .. import schema
from ..authentication import require_caller
from .groups import non_negative_int as query_int

EVENT_PAGE_RESPONSES = {
    200: schema.ContextEventPageSerializer,
    **schema.errors(400, 401, 403, 404, 410),
}
PACKAGE = OpenApiParameter("package", str, OpenApiParameter.PATH, description="package id")
FROM_GROUP = OpenApiParameter(
    "from_group", str, OpenApiParameter.PATH, description="the group that forwarded it"
)
VERSION = OpenApiParameter("version", int, OpenApiParameter.PATH)
PAGE = [
    OpenApiParameter("after", int, description="events with sequence > after (default from - 1)"),
    OpenApiParameter("limit", int, description="default 100, clamped to 1000"),
]


# --- the packages of a group ------------------------------------------------------------------

#: at most this many packages a page, whatever ``limit`` asks
MAX_LISTED = 1000


def _id_parameter(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    if value is not None:
        try:
            check_id(value, name)
        except ProtocolError:
            raise ProtocolError(
                ErrorCode.MALFORMED,
                f"{name} is a wire id",
                requirement="wire§1",
                details={"parameter": name},
            ) from None
    return value


class ContextPackageListApi(APIView):
    @extend_schema(
        parameters=[
            schema.GROUP,
            OpenApiParameter(
                "mission", str, description="only packages summarising this mission of the group"
            ),
            OpenApiParameter(
                "work_item", str, description="only packages whose scope names this WorkItem"
            ),
            OpenApiParameter("after", str, description="the key to list after (next_after)"),
            OpenApiParameter("limit", int, description="default 100, clamped to 1000"),
        ],
        responses={200: schema.ContextPackageListSerializer, **schema.errors(400, 401, 403, 404)},
        summary="The context packages recorded in this group, by key, each with its latest version",
        operation_id="context_list",
    )
    def get(self, request: Request, group: str) -> Response:
        caller = require_caller(request)
        mission = _id_parameter(request, "mission")
        work_item = _id_parameter(request, "work_item")
        limit = min(max(query_int(request, "limit", 100), 1), MAX_LISTED)
        selectors.access_group(group, caller.principal)
        packages, next_after = context_packages(
            group,
            mission=mission,
            work_item=work_item,
            after=request.query_params.get("after", ""),
            limit=limit,
        )
        return Response(
            {"packages": [package.summary() for package in packages], "next_after": next_after}
        )


# --- the package -------------------------------------------------------------------------


def _package(request: Request, group: str, package: str, from_group: str | None) -> Any:
    caller = require_caller(request)
    selectors.access_group(group, caller.principal)
    return context_package(group, package, from_group).as_dict()


class ContextPackageDetailApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, PACKAGE],
        responses={200: schema.ContextPackageSerializer, **schema.errors(401, 403, 404)},
        summary="A context package published in this group: every version, signed",
        operation_id="context_retrieve",
    )
    def get(self, request: Request, group: str, package: str) -> Response:
        return Response(_package(request, group, package, None))


class ReceivedContextPackageDetailApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, FROM_GROUP, PACKAGE],
        responses={200: schema.ContextPackageSerializer, **schema.errors(401, 403, 404)},
        summary="A context package forwarded to this group from another",
        operation_id="context_received_retrieve",
    )
    def get(self, request: Request, group: str, from_group: str, package: str) -> Response:
        return Response(_package(request, group, package, from_group))


# --- the events a version cites (R13.3-03) ------------------------------------------------


def _cited_events(
    request: Request, group: str, package_id: str, version: int, from_group: str | None
) -> HttpResponse:
    caller = require_caller(request)
    after = query_int(request, "after", 0)
    limit = query_int(request, "limit", selectors.DEFAULT_PAGE)
    selectors.access_group(group, caller.principal)
    package: ContextPackage = context_package(group, package_id, from_group)
    entry = package.version(version)
    if entry is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no version {version} of context package {package_id!r}",
            requirement="wire§4",
            details={"package": package_id, "version": version},
        )
    first, last = entry["package"]["event_range"]
    source = package.source_group
    try:
        selectors.access_group(source, caller.principal)
    except ProtocolError as refusal:
        if refusal.code is not ErrorCode.NOT_A_MEMBER:
            raise
        # R13.3-03: the summary travels; the history behind it stays with the source's members
        raise ProtocolError(
            ErrorCode.NOT_A_MEMBER,
            f"{caller.principal} is not a member of {source}, whose events the package cites",
            requirement="R13.3-03",
            details={"group": source},
        ) from None
    page = selectors.events_page(source, after=max(after, first - 1), limit=limit, head=last)
    # The stored documents are already JSON: splice them, as the events endpoint does.
    body = (
        f'{{"group":{json.dumps(source)},"event_range":[{first},{last}],"events":['
        + ",".join(page.documents)
        + f'],"next_after":{page.next_after}}}'
    )
    return HttpResponse(body.encode("utf-8"), content_type="application/json")


class ContextEventsApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, PACKAGE, VERSION, *PAGE],
        responses={
            200: schema.ContextEventPageSerializer,
            **schema.errors(400, 401, 403, 404, 410),
        },
        summary="The events a version of a package cites, for members of its source group",
        operation_id="context_events_list",
    )
    def get(self, request: Request, group: str, package: str, version: int) -> HttpResponse:
        return _cited_events(request, group, package, version, None)


class ReceivedContextEventsApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, FROM_GROUP, PACKAGE, VERSION, *PAGE],
        responses={
            200: schema.ContextEventPageSerializer,
            **schema.errors(400, 401, 403, 404, 410),
        },
        summary="The events a forwarded package cites, for members of its source group",
        operation_id="context_received_events_list",
    )
    def get(
        self, request: Request, group: str, from_group: str, package: str, version: int
    ) -> HttpResponse:
        return _cited_events(request, group, package, version, from_group)
