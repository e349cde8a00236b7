"""Which open review page holds the person's reservation of a submission.

A review page gives its reservation back as the person leaves it (``review-page.js``), so a
glance from a notification holds nobody off. But leaving by a reload, or opening the same
submission again, sends the old page's release while the new page is already there: arriving
after the new page reserved, it would give back the reservation the person is working under,
and an agent could decide under them. So each page drawn gets a token; the page that holds
the reservation — drawn while the person holds it, or having reserved it since — is noted in
the person's session, and a release from any other page of theirs is not sent.
"""

from __future__ import annotations

import secrets

from django.contrib.sessions.backends.base import SessionBase

SESSION_KEY = "review-holding-pages"
#: submissions remembered per session (the oldest forgotten first)
REMEMBERED = 50


def new_page_token() -> str:
    return secrets.token_urlsafe(9)


def _key(group: str, work_item: str) -> str:
    return f"{group}/{work_item}"


def hold(session: SessionBase, group: str, work_item: str, page: str) -> None:
    """``page`` now holds the person's reservation of ``work_item``."""
    if not page:
        return
    pages = dict(session.get(SESSION_KEY) or {})
    pages.pop(_key(group, work_item), None)
    pages[_key(group, work_item)] = page
    session[SESSION_KEY] = dict(list(pages.items())[-REMEMBERED:])


def may_release(session: SessionBase, group: str, work_item: str, page: str) -> bool:
    """Whether ``page``, leaving, holds the reservation (and so gives it back); forgets it."""
    pages = dict(session.get(SESSION_KEY) or {})
    if not page or pages.get(_key(group, work_item)) != page:
        return False
    del pages[_key(group, work_item)]
    session[SESSION_KEY] = pages
    return True
