"""The memberships screen of a group (issue 13 §1): who holds which roles, grant, change
roles, revoke, the audit list of membership events, and the group's verifiable export.

Who administers: membership commands are staff-only (``staff_only=True`` in the command
table, wire.md §4), so Django staff administer memberships — of any group, member or not. A
signed-in person who is not staff gets 404 for a group they are not an active member of
(as on every group page) and a 403 page, in words, for one they are.

Thin function views: reads from ``memberships``; each form is the existing command sent as
the staff person through ``apps.registry.services`` (the one service every membership grant
goes through, which refuses a principal that does not exist) and the one write path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from apps.ledger import exports
from apps.ledger.write_path import Caller, Outcome
from apps.registry import services
from apps.registry.models import Group
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN, ROLES, is_id

from . import memberships, selectors
from .actions import new_command_id, refused, show_refusal

_NOT_STAFF = ProtocolError(
    ErrorCode.FORBIDDEN,
    "only staff administer memberships: membership.grant and membership.revoke are "
    "staff-only commands",
    requirement="wire§4",
)


class GrantForm(forms.Form):
    """``membership.grant``: a principal and the roles it is to hold (all of them: a grant to
    a member replaces its roles, wire.md §2)."""

    principal = forms.CharField(max_length=160)
    roles = forms.MultipleChoiceField(choices=[(role, role) for role in ROLES])
    command_id = forms.RegexField(regex=ID_PATTERN, required=False)


class RevokeForm(forms.Form):
    principal = forms.CharField(max_length=160)
    command_id = forms.RegexField(regex=ID_PATTERN, required=False)


def administered_group(request: HttpRequest, group_id: str) -> Group:
    """The group, for a staff person; 404 for a group a non-staff person is not a member of
    (a page never reveals a group), ``PermissionError`` for a non-staff member."""
    caller = Caller.for_user(request.user)
    if not caller.is_staff:
        if selectors.member_group(group_id, caller.principal) is None:
            raise Http404("no such group")
        raise PermissionError(group_id)
    group = Group.objects.filter(pk=group_id).first()
    if group is None:
        raise Http404("no such group")
    return group


def _not_staff(request: HttpRequest, group_id: str) -> HttpResponse:
    back = reverse("dashboard:group", args=[group_id])
    return render(
        request, "dashboard/refused.html", {"error": _NOT_STAFF, "back": back}, status=403
    )


@login_required
def members_page(request: HttpRequest, group: str) -> HttpResponse:
    """Who holds which roles (epoch, since when), the forms, and the audit list."""
    try:
        group_row = administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    try:
        before = selectors.before_parameter(request.GET.get("before"))
    except ValueError:
        return HttpResponseBadRequest("before is a positive integer")
    context: dict[str, Any] = {
        "group": group_row,
        "members": memberships.members(group),
        "audit": memberships.audit_page(group, before=before),
        "roles": ROLES,
        "command_id": new_command_id(),
        "return_to": reverse("dashboard:members", args=[group]),
        "is_member": selectors.member_group(group, Caller.for_user(request.user).principal)
        is not None,
    }
    return render(request, "dashboard/memberships/page.html", context)


def _submit(
    request: HttpRequest, group: str, send: Any, confirm: Callable[[Outcome], str]
) -> HttpResponse:
    back = reverse("dashboard:members", args=[group])
    try:
        outcome: Outcome = send()
    except ProtocolError as error:
        if error.status == 404:  # a principal that does not exist: say so on the page
            show_refusal(request, error)
            return HttpResponseRedirect(back)
        return refused(request, error, back)
    messages.success(request, f"{confirm(outcome)} (epoch {outcome.body['result']['epoch']}).")
    return HttpResponseRedirect(back)


def _command_id(form: forms.Form) -> str:
    value = form.cleaned_data.get("command_id")
    return value if is_id(value) else new_command_id()


@login_required
@require_POST
def member_grant(request: HttpRequest, group: str) -> HttpResponse:
    """``membership.grant`` as the staff person (wire§4): a new member, or new roles for a
    member; the same roles again change nothing (no event, same epoch)."""
    try:
        administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    form = GrantForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        show_refusal(
            request,
            ProtocolError(ErrorCode.MALFORMED, f"the grant form was incomplete: {problems}"),
        )
        return HttpResponseRedirect(reverse("dashboard:members", args=[group]))
    principal = form.cleaned_data["principal"].strip()
    roles = sorted(form.cleaned_data["roles"])
    return _submit(
        request,
        group,
        lambda: services.membership_grant(
            group_id=group,
            admin=Caller.for_user(request.user),
            body={"principal": principal, "roles": roles},
            command_id=_command_id(form),
        ),
        lambda outcome: (
            f"Granted {', '.join(roles)} to {principal}"
            if outcome.status == 201
            else f"{principal} holds {', '.join(roles)}"
        ),
    )


@login_required
@require_POST
def member_revoke(request: HttpRequest, group: str) -> HttpResponse:
    """``membership.revoke`` as the staff person (wire§4); the epoch survives (wire§2)."""
    try:
        administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    form = RevokeForm(request.POST)
    if not form.is_valid():
        show_refusal(request, ProtocolError(ErrorCode.MALFORMED, "the revoke form was incomplete"))
        return HttpResponseRedirect(reverse("dashboard:members", args=[group]))
    principal = form.cleaned_data["principal"]
    return _submit(
        request,
        group,
        lambda: services.membership_revoke(
            group_id=group,
            admin=Caller.for_user(request.user),
            principal=principal,
            command_id=_command_id(form),
        ),
        lambda outcome: f"Revoked the membership of {principal}",
    )


@login_required
def group_export(request: HttpRequest, group: str) -> HttpResponse:
    """The group's complete verifiable history as a file: the ``export_group`` format
    (signed header, every event as stored, signed head; R16-08, R16-10)."""
    try:
        administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    exported = exports.group_export(group)
    if exported is None:
        raise Http404("no such group")
    _log, lines = exported
    response = StreamingHttpResponse(lines, content_type="application/jsonl")
    response["Content-Disposition"] = f'attachment; filename="{group}.export.jsonl"'
    return response


class GroupCreateForm(forms.Form):
    id = forms.RegexField(regex=ID_PATTERN, max_length=128)
    organization = forms.RegexField(regex=ID_PATTERN, max_length=128)
    name = forms.CharField(max_length=200)


def create_group(request: HttpRequest) -> HttpResponse:
    """A group created from the dashboard (staff only): the registry's ``group_create`` (an
    empty log), then its creator's first membership, ``admin`` + ``mission_owner``, through
    the one write path — so the creator can open it at once. ``POST /api/v1/groups`` keeps
    starting an empty log (wire§4)."""
    caller = Caller.for_user(request.user)
    back = reverse("dashboard:groups")
    if not caller.is_staff:
        return render(
            request, "dashboard/refused.html", {"error": _NOT_STAFF, "back": back}, status=403
        )
    form = GroupCreateForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        show_refusal(
            request,
            ProtocolError(ErrorCode.MALFORMED, f"the group form was incomplete: {problems}"),
        )
        return HttpResponseRedirect(back)
    try:
        group, created = services.group_create(body=dict(form.cleaned_data))
        if created:
            services.membership_grant(
                group_id=group.id,
                admin=caller,
                body={"principal": caller.principal, "roles": ["admin", "mission_owner"]},
            )
    except ProtocolError as error:
        show_refusal(request, error)
        return HttpResponseRedirect(back)
    if not created:
        messages.info(request, f"The group {group.id} already exists.")
        return HttpResponseRedirect(back)
    messages.success(request, f"Created {group.name}: you are its admin and mission owner.")
    return HttpResponseRedirect(reverse("dashboard:group", args=[group.id]))


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/members/", members_page, name="members"),
    path("groups/<str:group>/members/grant/", member_grant, name="members-grant"),
    path("groups/<str:group>/members/revoke/", member_revoke, name="members-revoke"),
    path("groups/<str:group>/members/export/", group_export, name="members-export"),
]
