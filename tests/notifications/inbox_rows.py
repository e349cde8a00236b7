"""Notification rows made directly, for the tests of the notifications page and the bell:
what the producer would have made, without the log (``test_producing`` covers that)."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from apps.notifications.kinds import EmailMode, Kind
from apps.notifications.models import Notification
from apps.registry.models import Group, Organization

_keys = itertools.count(1)


def group(group_id: str = "g-pages", name: str = "Research desk") -> Group:
    organization, _ = Organization.objects.get_or_create(id="org-pages", name="Org")
    found, _ = Group.objects.get_or_create(
        id=group_id, defaults={"organization": organization, "name": name}
    )
    return found


def person(username: str) -> AbstractBaseUser:
    return get_user_model().objects.create_user(
        username, password=f"pw-{username}-1234", email=f"{username}@example.test"
    )


def told(
    user: AbstractBaseUser,
    title: str,
    *,
    link: str = "/groups/g-pages/work-items/w-1/approval/",
    in_app: bool = True,
    kind: Kind = Kind.APPROVAL_NEEDED,
    group_id: str = "g-pages",
) -> Notification:
    return Notification.objects.create(
        user=user,
        kind=kind.value,
        group=group(group_id),
        key=f"e-{next(_keys)}",
        subject_type="work_item",
        subject_id="w-1",
        title=title,
        body=f"Body of {title}.",
        link=link,
        in_app=in_app,
        email_mode=EmailMode.IMMEDIATE.value,
    )
