"""The account screen at ``/account/`` (issue 13 §3): change the password, list, create and
revoke one's API tokens, and see and end one's signed-in sessions.

Thin views over ``accounts``; every change is a POST behind Django's CSRF check, and nothing
here touches another person's rows (their ids are 404). Accounts are not group state, so
these changes do not go through the ledger's write path.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from . import accounts


class TokenForm(forms.Form):
    """The label that tells one token from another once its secret is gone from view."""

    label = forms.CharField(
        max_length=accounts.LABEL_MAX,
        help_text="Where the token will be used, e.g. “laptop CLI” or “CI deploy”.",
    )


#: the session key that carries a new token's secret from its POST to the one page showing it
NEW_TOKEN_KEY = "dashboard_new_api_token"  # noqa: S105 - a session key, not a secret


def _page(
    request: HttpRequest,
    *,
    password_form: PasswordChangeForm | None = None,
    token_form: TokenForm | None = None,
    new_token: str | None = None,
    status: int = 200,
) -> HttpResponse:
    user = request.user
    password_form = password_form or PasswordChangeForm(user)
    # Django autofocuses the old password; on a page of three forms that would steal focus
    password_form.fields["old_password"].widget.attrs.pop("autofocus", None)
    context = {
        "password_form": password_form,
        "token_form": token_form or TokenForm(),
        "tokens": list(accounts.tokens_of(user)),
        "sessions": accounts.sessions_of(user, request.session.session_key),
        "new_token": new_token,
    }
    return render(request, "dashboard/account/account.html", context, status=status)


def _back() -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("dashboard:account"))


@never_cache
@login_required
def account(request: HttpRequest) -> HttpResponse:
    # a token created by the POST just before is shown here once, then gone from the session
    return _page(request, new_token=request.session.pop(NEW_TOKEN_KEY, None))


@never_cache
@login_required
@require_POST
def password_change(request: HttpRequest) -> HttpResponse:
    """Django's password check; the session stays signed in (its auth hash is updated), while
    every other session of the person stops authenticating with the old hash."""
    form = PasswordChangeForm(request.user, request.POST)
    if not form.is_valid():
        return _page(request, password_form=form, status=400)
    user = form.save()
    update_session_auth_hash(request, user)
    messages.success(request, "Your password was changed. Other sessions were signed out.")
    return _back()


@never_cache
@login_required
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    """Post/redirect/get (issue 34 §7): the token is created here and its secret carried in
    the person's own session to the account page, which shows it once and forgets it. A
    reload of that page re-sends nothing, so it never mints a second token, and never shows
    the secret again (the registry keeps only its digest)."""
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, token_form=form, status=400)
    request.session[NEW_TOKEN_KEY] = accounts.create_token(request.user, form.cleaned_data["label"])
    return HttpResponseRedirect(reverse("dashboard:account") + "#new-token")


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_revoke(request: HttpRequest, token: int) -> HttpResponse:
    """Revoking is asked first (issue 34 §7): a page names the token and what stops working,
    and only its second submit (``confirm``) revokes — scripts or not."""
    if request.method == "GET" or request.POST.get("confirm") != "on":
        return render(
            request,
            "dashboard/account/confirm-revoke.html",
            {"token": accounts.token_of(request.user, token)},
        )
    revoked = accounts.revoke_token(request.user, token)
    messages.success(request, f"Token “{revoked.label or 'unlabelled'}” was revoked.")
    return _back()


@login_required
@require_POST
def sessions_end_others(request: HttpRequest) -> HttpResponse:
    ended = accounts.end_other_sessions(request.user, request.session.session_key)
    noun = "session" if ended == 1 else "sessions"
    messages.success(request, f"Signed out {ended} other {noun}.")
    return _back()


urlpatterns: list[URLPattern] = [
    path("account/", account, name="account"),
    path("account/password/", password_change, name="account-password"),
    path("account/tokens/", token_create, name="account-token-create"),
    path("account/tokens/<int:token>/revoke/", token_revoke, name="account-token-revoke"),
    path("account/sessions/end-others/", sessions_end_others, name="account-sessions-end"),
]
