"""A person's own account: their API tokens and their signed-in sessions (issue 13 §3).

Kept apart from the views so the rules live in one place: a person sees and ends only their
own tokens and sessions, and a token's secret exists in plain text only in the response that
creates it (the registry stores its digest, as ``api_token_create`` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import SESSION_KEY
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.sessions.models import Session
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone

from apps.registry.models import ApiToken, new_token, token_digest
from apps.registry.services import API_TOKEN_PREFIX

#: the longest label the model keeps
LABEL_MAX = ApiToken._meta.get_field("label").max_length


def tokens_of(user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The person's API tokens, newest first (only digests: the secrets are never kept)."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")


def create_token(user: AbstractBaseUser, label: str) -> str:
    """A new API token for ``user``; returns the secret, which is shown once and not stored."""
    token = new_token(API_TOKEN_PREFIX)
    ApiToken.objects.create(user=user, token_hash=token_digest(token), label=label[:LABEL_MAX])
    return token


def token_of(user: AbstractBaseUser, token_id: int) -> ApiToken:
    """One of the person's tokens; another person's id is a 404, as an unknown one."""
    return get_object_or_404(ApiToken, pk=token_id, user=user)


def revoke_token(user: AbstractBaseUser, token_id: int) -> ApiToken:
    """Delete one of the person's tokens; another person's id is a 404, as an unknown one.

    Deleting the row is the revocation: ``authenticate_bearer`` finds no digest and answers
    ``UNAUTHENTICATED`` from the next request on.
    """
    token = token_of(user, token_id)
    token.delete()
    return token


@dataclass(frozen=True)
class SignedIn:
    """One of the person's live sessions, as the session store knows it."""

    key: str
    expires: datetime
    current: bool

    @property
    def short(self) -> str:
        # enough to tell sessions apart on screen without showing a usable session key
        return self.key[:6] + "…"


def _sessions_of(user: AbstractBaseUser) -> list[Session]:
    """The unexpired DB sessions whose decoded data names ``user``.

    The database backend keeps the user only inside the encoded data, so each live row is
    decoded; a store with millions of live sessions would want an index of its own.
    """
    found = []
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        if session.get_decoded().get(SESSION_KEY) == str(user.pk):
            found.append(session)
    return found


def sessions_of(user: AbstractBaseUser, current_key: str | None) -> list[SignedIn]:
    """The person's sessions, the current one first, then the ones expiring last."""
    sessions = [
        SignedIn(key=s.session_key, expires=s.expire_date, current=s.session_key == current_key)
        for s in _sessions_of(user)
    ]
    return sorted(sessions, key=lambda s: (not s.current, -s.expires.timestamp()))


def end_other_sessions(user: AbstractBaseUser, current_key: str | None) -> int:
    """Sign the person out everywhere but here; returns how many sessions ended."""
    others = [s.session_key for s in _sessions_of(user) if s.session_key != current_key]
    Session.objects.filter(session_key__in=others).delete()
    return len(others)
