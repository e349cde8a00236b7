"""The hooks page of a group (issue 36 §2): ``/groups/<g>/hooks/``, for its admins.

A group's admins (the group role ``admin``) and Django staff list the group's chat rooms and
webhooks with their state (on, last delivered, failures in a row, why one was turned off),
add one, send it a test message, turn it on again, delete it, and read each hook's recent
deliveries with every attempt. A member who is not an admin gets a page saying who manages
hooks; someone who is neither a member nor staff gets 404, as on every group page
(docs/dashboard.md, "Rules every screen keeps").

A hook's URL is a secret: once saved, only its service, scheme and host are shown. A
webhook's signing secret is shown once, on the page right after it was made.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.registry.models import Group

from . import facts, hook_targets, hooks
from .hook_models import DeliveryAttempt, GroupHook, HookKind
from .hook_outbox import HOOK_KINDS, group_label
from .kinds import Kind
from .models import Delivery

RECENT = 20
SHOWN_ONCE_SESSION_KEY = "hook-secret-"
#: a view of one hook, once ``_admins_hook`` found its group and it
HookView = Callable[[HttpRequest, Group, GroupHook], HttpResponse]


class HookForm(forms.Form):
    """A new hook: its name, what it is, where it goes, and which news it receives."""

    name = forms.CharField(max_length=100, label="Name")
    kind = forms.ChoiceField(
        choices=HookKind.choices, widget=forms.RadioSelect, initial=HookKind.CHAT, label="Kind"
    )
    url = forms.CharField(
        max_length=2000,
        label="URL",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    kinds = forms.MultipleChoiceField(
        choices=[(kind.value, group_label(kind)) for kind in HOOK_KINDS],
        widget=forms.CheckboxSelectMultiple,
        initial=[kind.value for kind in HOOK_KINDS],
        label="News it receives",
        error_messages={"required": "Choose at least one kind of news."},
    )

    def __init__(self, *args: Any, group_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group_id = group_id

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if GroupHook.objects.filter(group_id=self.group_id, name=name).exists():
            raise forms.ValidationError(f"This group already has a hook named “{name}”.")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "url" in data and "kind" in data:
            try:
                data["url"] = hook_targets.check(data["kind"], data["url"])
            except hook_targets.BadTarget as bad:
                self.add_error("url", str(bad))
        return data


def _group_and_rights(request: HttpRequest, group_id: str) -> tuple[Group, bool]:
    """The group and whether the person manages its hooks; 404 for a non-member not staff."""
    group = Group.objects.filter(pk=group_id).first()
    membership = hooks.membership_of(request.user, group_id) if group else None
    if group is None or (membership is None and not request.user.is_staff):
        raise Http404("no such group")
    return group, hooks.administers(request.user, membership)


def _only_admins(request: HttpRequest, group: Group) -> HttpResponse:
    names = [facts.display_name(p) for p in hooks.admins_of(group.pk)]
    context = {"group": group, "admins": names}
    return render(request, "notifications/hooks/only-admins.html", context, status=403)


def _hook(group: Group, hook_id: int) -> GroupHook:
    hook = GroupHook.objects.filter(group=group, pk=hook_id).first()
    if hook is None:
        raise Http404("no such hook")
    return hook


def _admins_hook(view: HookView) -> Callable[[HttpRequest, str, int], HttpResponse]:
    """A view of one hook, for those who manage the group's hooks: 404 for a non-member or
    a hook of another group, the page naming the admins for a member who is not one."""

    @wraps(view)
    def checked(request: HttpRequest, group: str, hook: int) -> HttpResponse:
        found, manages = _group_and_rights(request, group)
        if not manages:
            return _only_admins(request, found)
        return view(request, found, _hook(found, hook))

    return checked


def _page(request: HttpRequest, group: Group, form: HookForm, status: int = 200) -> HttpResponse:
    rows = list(GroupHook.objects.filter(group=group).order_by("name"))
    secrets_shown = {
        hook.pk: request.session.pop(f"{SHOWN_ONCE_SESSION_KEY}{hook.pk}", "") for hook in rows
    }
    labels = {kind.value: group_label(kind) for kind in Kind}
    context = {
        "group": group,
        "form": form,
        "hooks": [
            {
                "hook": hook,
                "secret": secrets_shown.get(hook.pk, ""),
                "kinds": [labels.get(k, k) for k in hook.kinds],
                "all_kinds": set(hook.kinds) >= {k.value for k in HOOK_KINDS},
                "technical": [
                    ("hook id", str(hook.pk)),
                    ("channel", hook.kind),
                    ("created by", hook.created_by.get_username() if hook.created_by else "?"),
                ],
            }
            for hook in rows
        ],
        "test_token": uuid.uuid4().hex,
    }
    return render(request, "notifications/hooks/page.html", context, status=status)


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def hooks_page(request: HttpRequest, group: str) -> HttpResponse:
    found, manages = _group_and_rights(request, group)
    if not manages:
        return _only_admins(request, found)
    form = HookForm(request.POST or None, group_id=found.pk)
    if request.method == "POST":
        if not form.is_valid():
            return _page(request, found, form, status=400)
        made = hooks.create(group_id=found.pk, by=request.user, **form.cleaned_data)
        if made.secret:
            request.session[f"{SHOWN_ONCE_SESSION_KEY}{made.hook.pk}"] = made.secret
        messages.success(request, f"Added the hook “{made.hook.name}”.")
        return HttpResponseRedirect(
            reverse("hooks:page", args=[found.pk]) + f"#hook-{made.hook.pk}"
        )
    return _page(request, found, form)


@login_required
@never_cache
@_admins_hook
def hook_detail(request: HttpRequest, found: Group, row: GroupHook) -> HttpResponse:
    deliveries = list(
        Delivery.objects.filter(hook_message__hook=row)
        .select_related("hook_message")
        .order_by("-created_at", "-pk")[:RECENT]
    )
    attempts: dict[int, list[DeliveryAttempt]] = {}
    for attempt in DeliveryAttempt.objects.filter(delivery__in=deliveries):
        attempts.setdefault(attempt.delivery_id, []).append(attempt)
    labels = {**{kind.value: group_label(kind) for kind in Kind}, "test": "Test message"}
    context = {
        "group": found,
        "hook": row,
        "deliveries": [
            {
                "delivery": d,
                "kind": labels.get(d.hook_message.kind, d.hook_message.kind),
                "title": d.hook_message.document.get("title", ""),
                "attempts": attempts.get(d.pk, []),
                "technical": [("delivery", str(d.pk)), ("key", d.key)]
                + ([("last error", d.last_error)] if d.last_error else []),
            }
            for d in deliveries
        ],
        "test_token": uuid.uuid4().hex,
    }
    return render(request, "notifications/hooks/detail.html", context)


@login_required
@require_POST
@_admins_hook
def hook_test(request: HttpRequest, found: Group, row: GroupHook) -> HttpResponse:
    token = (request.POST.get("token") or uuid.uuid4().hex)[:64]
    sender = facts.display_name(f"user:{request.user.get_username()}")
    hooks.send_test(row, sender, token)
    messages.success(
        request, f"A test message is on its way to “{row.name}”: its delivery is listed below."
    )
    return HttpResponseRedirect(reverse("hooks:detail", args=[found.pk, row.pk]))


@login_required
@require_POST
@_admins_hook
def hook_enable(request: HttpRequest, found: Group, row: GroupHook) -> HttpResponse:
    hooks.turn_on(row)
    messages.success(request, f"“{row.name}” is on again.")
    return HttpResponseRedirect(reverse("hooks:page", args=[found.pk]) + f"#hook-{row.pk}")


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
@_admins_hook
def hook_delete(request: HttpRequest, found: Group, row: GroupHook) -> HttpResponse:
    """Asked first on a page of its own; its "Yes, delete" button deletes."""
    if request.method == "POST":
        hooks.delete(row)
        messages.success(request, f"Deleted the hook “{row.name}”.")
        return HttpResponseRedirect(reverse("hooks:page", args=[found.pk]))
    return render(request, "notifications/hooks/confirm-delete.html", {"group": found, "hook": row})
