"""Group endpoints: commands, batches, events, the signed head, missions (wire.md §4)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ledger import authority, selectors
from apps.ledger.write_path import Outcome, submit_command
from apps.work.selectors import mission_document, work_item_document

from .. import answers, schema
from ..authentication import require_caller
from ..parsers import check_json_media_type


def _outcome_response(outcome: Outcome) -> Response:
    return Response(outcome.body, status=outcome.status, headers=answers.outcome_headers(outcome))


class CommandSubmitApi(APIView):
    body_limit_setting = "MWP_MAX_COMMAND_BYTES"

    @extend_schema(
        parameters=[schema.GROUP],
        request=schema.EnvelopeSerializer,
        responses={
            201: schema.CommandResponseSerializer,
            202: schema.CommandResponseSerializer,
            **schema.errors(400, 401, 403, 404, 409, 413, 415),
        },
        summary="Submit one command (wire.md §3)",
    )
    def post(self, request: Request, group: str) -> Response:
        caller = require_caller(request)
        check_json_media_type(request.content_type)  # also when the body is empty
        outcome = submit_command(group_id=group, document=request.data, caller=caller)
        return _outcome_response(outcome)


class CommandBatchApi(APIView):
    body_limit_setting = "MWP_MAX_BATCH_BYTES"

    @extend_schema(
        parameters=[schema.GROUP],
        request=schema.BatchRequestSerializer,
        responses={200: schema.BatchResponseSerializer, **schema.errors(400, 401, 404, 413, 415)},
        summary="Submit up to 500 commands, each judged on its own, in order",
    )
    def post(self, request: Request, group: str) -> Response:
        caller = require_caller(request)
        check_json_media_type(request.content_type)
        return Response(answers.batch_document(group, request.data, caller))


def non_negative_int(request: Request, name: str, default: int) -> int:
    return answers.query_int(request.query_params.get(name), name, default)


class EventListApi(APIView):
    @extend_schema(
        parameters=[
            schema.GROUP,
            OpenApiParameter("after", int, description="return events with sequence > after"),
            OpenApiParameter("limit", int, description="default 100, clamped to 1000"),
        ],
        responses={200: schema.EventPageSerializer, **schema.errors(400, 401, 403, 404, 410)},
        summary="Events of a group after a sequence, in order",
    )
    def get(self, request: Request, group: str) -> HttpResponse:
        caller = require_caller(request)
        after = non_negative_int(request, "after", 0)
        limit = non_negative_int(request, "limit", selectors.DEFAULT_PAGE)
        page = selectors.readable_page(group, caller.principal, after=after, limit=limit)
        return HttpResponse(answers.events_body(page), content_type="application/json")


class HeadApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP],
        responses={200: schema.HeadSerializer, **schema.errors(401, 403, 404)},
        summary="The group's head, signed by the authority",
    )
    def get(self, request: Request, group: str) -> Response:
        caller = require_caller(request)
        log = selectors.access_group(group, caller.principal)
        return Response(authority.signed_head(log))


class MissionDetailApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, OpenApiParameter("mission", str, OpenApiParameter.PATH)],
        responses={200: schema.MissionSerializer, **schema.errors(401, 403, 404)},
        summary="The Mission projection",
    )
    def get(self, request: Request, group: str, mission: str) -> Response:
        caller = require_caller(request)
        selectors.access_group(group, caller.principal)
        return Response(mission_document(group, mission))


class WorkItemDetailApi(APIView):
    @extend_schema(
        parameters=[schema.GROUP, OpenApiParameter("work_item", str, OpenApiParameter.PATH)],
        responses={200: schema.WorkItemSerializer, **schema.errors(401, 403, 404)},
        summary="The WorkItem projection",
    )
    def get(self, request: Request, group: str, work_item: str) -> Response:
        caller = require_caller(request)
        selectors.access_group(group, caller.principal)
        return Response(work_item_document(group, work_item))
