"""The notifications' own pages (issue 36 §3): the one-click unsubscribe of an email, and a
person's preferences per kind. The bell and the notifications list are the dashboard's.

Unsubscribe needs no sign-in: the signed token in the link is the authority. A GET only shows
a button (mail scanners follow links); a POST turns that kind's email off — from the button,
or from a mail client's one-click ``List-Unsubscribe-Post`` (RFC 8058), which carries no CSRF
token, so that view is exempt: it changes nothing but the one preference its token names.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from . import preferences
from .kinds import EmailMode, Kind
from .unsubscribe import read_token

app_name = "notifications"


@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user_id, kind = read_token(token)
    except signing.BadSignature:
        return render(request, "notifications/unsubscribe.html", {"invalid": True}, status=404)
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return render(request, "notifications/unsubscribe.html", {"invalid": True}, status=404)
    done = request.method == "POST"
    if done:
        preferences.set_preference(user, kind, email=EmailMode.OFF)
    context = {"kind": kind, "done": done, "token": token}
    return render(request, "notifications/unsubscribe.html", context)


def _field(kind: Kind) -> str:
    return kind.value


class PreferencesForm(forms.Form):
    """Per kind: email at once, in a daily digest or not at all; shown in the app or not."""

    def __init__(
        self, *args: object, initial_prefs: dict[Kind, preferences.Preference], **kw: object
    ) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        for kind in Kind:
            current = initial_prefs[kind]
            self.fields[f"{kind.value}-email"] = forms.ChoiceField(
                label=f"{kind.label}: email",
                choices=EmailMode.choices,
                initial=current.email.value,
                widget=forms.RadioSelect,
            )
            self.fields[f"{kind.value}-in_app"] = forms.BooleanField(
                label=f"{kind.label}: show in the app",
                required=False,
                initial=current.in_app,
            )

    def rows(self) -> list[tuple[Kind, forms.BoundField, forms.BoundField]]:
        return [(k, self[f"{k.value}-email"], self[f"{k.value}-in_app"]) for k in Kind]


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def settings_page(request: HttpRequest) -> HttpResponse:
    current = preferences.effective_all(request.user)
    form = PreferencesForm(request.POST or None, initial_prefs=current)
    if request.method == "POST" and form.is_valid():
        for kind in Kind:
            preferences.set_preference(
                request.user,
                kind,
                in_app=form.cleaned_data[f"{kind.value}-in_app"],
                email=form.cleaned_data[f"{kind.value}-email"],
            )
        messages.success(request, "Your notification settings are saved.")
        return HttpResponseRedirect(reverse("notifications:settings"))
    return render(request, "notifications/settings.html", {"form": form})


urlpatterns: list[URLPattern] = [
    path("settings/", settings_page, name="settings"),
    path("unsubscribe/<str:token>/", unsubscribe, name="unsubscribe"),
]
