"""Agent session tokens a process has judged, kept until their session expires."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime

from django.utils import timezone

from apps.ledger.write_path import Caller
from apps.registry.services import SESSION_TOKEN_PREFIX, Authenticated, token_digest

#: agent session tokens remembered per process
SESSION_CACHE_SIZE = 10_000


class SessionCallers:
    """Agent session tokens this process has judged, by digest, until their session expires.

    Every agent command used to look its token up in PostgreSQL before its body was read: a
    thread hop and a round trip per request. A session's token, agent, epoch and expiry never
    change, so what can make a known token stale is a newer session of its agent, and the
    write path refuses that under the group lock, before anything else it reads
    (``STALE_SESSION``, R11.3-10, ``write_path._apply``). So a token found here is judged from
    memory; its expiry is checked on every use. People's API tokens are not kept: a user can
    be deactivated, and their requests are rare.
    """

    def __init__(self, capacity: int = SESSION_CACHE_SIZE) -> None:
        self.capacity = capacity
        self._callers: OrderedDict[str, tuple[Caller, datetime]] = OrderedDict()

    def get(self, token: str) -> Caller | None:
        if not token.startswith(SESSION_TOKEN_PREFIX + "_"):
            return None
        digest = token_digest(token)
        found = self._callers.get(digest)
        if found is None:
            return None
        caller, expires_at = found
        if expires_at <= timezone.now():
            del self._callers[digest]
            return None
        self._callers.move_to_end(digest)
        return caller

    def remember(self, token: str, authenticated: Authenticated) -> None:
        if authenticated.session is None:
            return
        self._callers[token_digest(token)] = (
            authenticated.caller,
            authenticated.session.expires_at,
        )
        if len(self._callers) > self.capacity:
            self._callers.popitem(last=False)
