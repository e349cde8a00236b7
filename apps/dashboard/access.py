"""The dashboard's one membership check: every group page and form starts here.

A group the person is not an active member of is 404 whether or not it exists: like
``GET /artifacts`` (wire.md §4), a page never reveals what a person may not see.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import selectors


def access_membership(request: HttpRequest, group_id: str) -> Membership:
    """The signed-in person's active membership of ``group_id`` (with the group), or 404."""
    membership = selectors.member_group(group_id, Caller.for_user(request.user).principal)
    if membership is None:
        raise Http404("no such group")
    return membership
