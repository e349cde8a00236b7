"""The memberships screen of a group (issue 13 §1, issue 36 §6): who holds which roles, grant,
change roles, revoke, the audit list of membership events, and the group's verifiable export.

Who administers: Django staff (of any group, member or not) and the group's own ``admin``
role (wire.md §2 "admin (memberships)"; the command table names it for ``membership.grant``
and ``membership.revoke``). Every other member of the group sees the screen read-only — who is
in the group, their roles and the changes, by name — and a sentence saying who can change
them; a person who is neither staff nor a member gets 404 (as on every group page).

Thin function views: reads from ``memberships``; each form is the existing command sent as
the person through ``apps.registry.services`` (the one service every membership grant goes
through, which refuses a principal that does not exist) and the one write path, which
decides again whether this person may.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
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
from django.views.decorators.http import require_http_methods, require_POST

from apps.ledger import exports
from apps.ledger.write_path import Caller, Outcome
from apps.registry import services
from apps.registry.models import Group
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN, ROLES, is_id

from . import memberships, names, selectors
from .actions import new_command_id, refused, show_refusal
from .names import display_name
from .refusal_words import form_problems
from .streaming import streamed

_NOT_STAFF = ProtocolError(ErrorCode.FORBIDDEN, "only staff create groups", requirement="wire§4")
_NOT_ADMIN = ProtocolError(
    ErrorCode.FORBIDDEN,
    "only staff and the group's admins change memberships: membership.grant and "
    "membership.revoke are issued by staff or the group role admin",
    requirement="wire§2",
)
_NOT_ADMIN_WORDS = (
    "Only the group's admins and the site's staff change memberships: ask one of them."
)
#: who a grant is for, as the form asks it: a person by username, an agent by its id
KINDS = (("user", "A person (username)"), ("agent", "An agent (agent id)"))


class GrantForm(forms.Form):
    """``membership.grant``: who and the roles they are to hold (all of them: a grant to a
    member replaces its roles, wire.md §2). Who is a kind and a name (the screen never asks
    a person to type ``user:``), or the principal itself (the change-roles forms send it)."""

    principal = forms.CharField(max_length=160, required=False)
    kind = forms.ChoiceField(choices=KINDS, required=False)
    name = forms.CharField(max_length=150, required=False, label="username or agent id")
    roles = forms.MultipleChoiceField(choices=[(role, role) for role in ROLES])
    command_id = forms.RegexField(regex=ID_PATTERN, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        principal = (data.get("principal") or "").strip()
        name = (data.get("name") or "").strip()
        if not principal and name:
            principal = f"{data.get('kind') or 'user'}:{name}"
        if not principal:
            raise forms.ValidationError("Say who: a username or an agent id.", code="who")
        data["principal"] = principal
        return data


class RevokeForm(forms.Form):
    principal = forms.CharField(max_length=160)
    command_id = forms.RegexField(regex=ID_PATTERN, required=False)
    #: the second submit of the confirmation page; without it the page asks first
    confirm = forms.BooleanField(required=False)


def group_for(request: HttpRequest, group_id: str) -> tuple[Group, bool]:
    """The group and whether the person may change its memberships (staff, or its
    ``admin``); 404 for a group a non-staff person is not an active member of (a page never
    reveals a group)."""
    caller = Caller.for_user(request.user)
    if not caller.is_staff and selectors.member_group(group_id, caller.principal) is None:
        raise Http404("no such group")
    group = Group.objects.filter(pk=group_id).first()
    if group is None:
        raise Http404("no such group")
    return group, services.administers(group_id, caller)


def administered_group(request: HttpRequest, group_id: str) -> Group:
    """The group, for a person who may change its memberships; 404 as ``group_for``, and
    ``PermissionError`` for a member who may not."""
    group, administers = group_for(request, group_id)
    if not administers:
        raise PermissionError(group_id)
    return group


def _not_staff(request: HttpRequest, group_id: str) -> HttpResponse:
    back = reverse("dashboard:members", args=[group_id])
    return refused(request, _NOT_ADMIN, back, words=_NOT_ADMIN_WORDS)


@dataclass(frozen=True)
class GrantTyped:
    """What the person typed in the grant form, put back when it is refused, with the reason
    next to the field it concerns ("A person never loses what they typed")."""

    kind: str = "user"
    name: str = ""
    roles: tuple[str, ...] = ()
    name_problem: str = ""


@login_required
def members_page(request: HttpRequest, group: str) -> HttpResponse:
    """Who holds which roles (since when), the forms, and the audit list; each person and
    agent by name (one lookup for the page, ``names.prime``)."""
    group_row, administers = group_for(request, group)
    try:
        before = selectors.before_parameter(request.GET.get("before"))
    except ValueError:
        return HttpResponseBadRequest("before is a positive integer")
    return _members_response(request, group_row, administers=administers, before=before)


def _members_response(
    request: HttpRequest,
    group_row: Group,
    *,
    administers: bool,
    before: int | None = None,
    typed: GrantTyped | None = None,
    status: int = 200,
) -> HttpResponse:
    group = group_row.pk
    members = memberships.members(group)
    audit = memberships.audit_page(group, before=before)
    names.prime(
        [member.principal for member in members]
        + [who for entry in audit.entries for who in (entry.actor, entry.principal)]
    )
    context: dict[str, Any] = {
        "group": group_row,
        "members": members,
        "audit": audit,
        "administers": administers,
        "admins": [member for member in members if "admin" in member.roles],
        "kinds": KINDS,
        "roles": ROLES,
        "command_id": new_command_id(),
        "return_to": reverse("dashboard:members", args=[group]),
        "is_member": selectors.member_group(group, Caller.for_user(request.user).principal)
        is not None,
        "typed": typed or GrantTyped(),
    }
    return render(request, "dashboard/memberships/page.html", context, status=status)


def _answer_refusal(request: HttpRequest, group: str, error: ProtocolError) -> HttpResponse:
    back = reverse("dashboard:members", args=[group])
    if error.status == 404:  # a principal that does not exist: say so on the page
        show_refusal(request, error)
        return HttpResponseRedirect(back)
    return refused(request, error, back)


def _submit(
    request: HttpRequest, group: str, send: Any, confirm: Callable[[Outcome], str]
) -> HttpResponse:
    try:
        outcome: Outcome = send()
    except ProtocolError as error:
        return _answer_refusal(request, group, error)
    messages.success(request, f"{confirm(outcome)}.")
    return HttpResponseRedirect(reverse("dashboard:members", args=[group]))


def _command_id(form: forms.Form) -> str:
    value = form.cleaned_data.get("command_id")
    return value if is_id(value) else new_command_id()


@login_required
@require_POST
def member_grant(request: HttpRequest, group: str) -> HttpResponse:
    """``membership.grant`` as the person (staff or the group's admin; wire§2, wire§4): a new
    member, or new roles for a member; the same roles again change nothing (no event, same
    epoch)."""
    try:
        group_row = administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    form = GrantForm(request.POST)
    typed = _typed(request)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        show_refusal(
            request,
            ProtocolError(ErrorCode.MALFORMED, f"the grant form is not valid: {problems}"),
            words=form_problems(form),
        )
        return _members_response(request, group_row, administers=True, typed=typed, status=400)
    principal = form.cleaned_data["principal"]
    roles = sorted(form.cleaned_data["roles"])
    who = display_name(principal)
    roles_said = ", ".join(role.replace("_", " ") for role in roles)
    try:
        outcome = services.membership_grant(
            group_id=group,
            admin=Caller.for_user(request.user),
            body={"principal": principal, "roles": roles},
            command_id=_command_id(form),
        )
    except ProtocolError as error:
        if error.status != 404 or not typed.name:
            return _answer_refusal(request, group, error)
        # nobody of that name (wire§4 NOT_FOUND): the page again, what was typed kept
        problem = _nobody_named(typed)
        show_refusal(request, error, words=problem)
        typed = replace(typed, name_problem=problem)
        return _members_response(request, group_row, administers=True, typed=typed, status=404)
    said = (
        f"Granted {roles_said} to {who}" if outcome.status == 201 else f"{who} holds {roles_said}"
    )
    messages.success(request, f"{said}.")
    return HttpResponseRedirect(reverse("dashboard:members", args=[group]))


def _typed(request: HttpRequest) -> GrantTyped:
    """The grant form's own fields as posted (the change-roles forms send a principal)."""
    kind = request.POST.get("kind", "user")
    return GrantTyped(
        kind=kind if kind in dict(KINDS) else "user",
        name=request.POST.get("name", "").strip()[:150],
        roles=tuple(role for role in request.POST.getlist("roles") if role in ROLES),
    )


def _nobody_named(typed: GrantTyped) -> str:
    if typed.kind == "agent":
        return (
            f"There is no agent with the id “{typed.name}”: an agent is registered before it "
            "can be given roles. Check the id on its agent card."
        )
    return (
        f"There is no person with the username “{typed.name}”. Check the spelling: a person "
        "is named by the username they sign in with, and needs an account first."
    )


@login_required
@require_http_methods(["GET", "POST"])
def member_revoke(request: HttpRequest, group: str) -> HttpResponse:
    """``membership.revoke`` as the person (staff or the group's admin; wire§4); the epoch
    survives (wire§2).

    A revoke is asked first (issue 34 §7): the list's "Revoke…" opens a page that names who
    loses which roles, and only its second submit (``confirm``) revokes — with scripts off
    as well, since it is a page, not a dialog."""
    try:
        group_row = administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    form = RevokeForm(request.POST if request.method == "POST" else request.GET)
    back = reverse("dashboard:members", args=[group])
    if not form.is_valid():
        show_refusal(
            request,
            ProtocolError(ErrorCode.MALFORMED, "the revoke form names nobody"),
            words="Nothing was revoked: the form did not say who.",
        )
        return HttpResponseRedirect(back)
    principal = form.cleaned_data["principal"]
    if request.method == "GET" or not form.cleaned_data["confirm"]:
        member = memberships.member(group, principal)
        if member is None:
            messages.info(request, f"{display_name(principal)} is not a member any more.")
            return HttpResponseRedirect(back)
        return render(
            request,
            "dashboard/memberships/confirm-revoke.html",
            {
                "group": group_row,
                "member": member,
                "command_id": form.cleaned_data.get("command_id") or new_command_id(),
                "back": back,
            },
        )
    return _submit(
        request,
        group,
        lambda: services.membership_revoke(
            group_id=group,
            admin=Caller.for_user(request.user),
            principal=principal,
            command_id=_command_id(form),
        ),
        lambda outcome: f"Revoked the membership of {display_name(principal)}",
    )


@login_required
def group_export(request: HttpRequest, group: str) -> HttpResponse:
    """The group's complete verifiable history as a file: the ``export_group`` format
    (signed header, every event as stored, signed head; R16-08, R16-10), for those who
    administer the group."""
    try:
        administered_group(request, group)
    except PermissionError:
        return _not_staff(request, group)
    exported = exports.group_export(group)
    if exported is None:
        raise Http404("no such group")
    _log, lines = exported
    response = StreamingHttpResponse(streamed(request, lines), content_type="application/jsonl")
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
        return refused(request, _NOT_STAFF, back, words="Only the site's staff create groups.")
    form = GroupCreateForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        show_refusal(
            request,
            ProtocolError(ErrorCode.MALFORMED, f"the group form is not valid: {problems}"),
            words=form_problems(form),
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
