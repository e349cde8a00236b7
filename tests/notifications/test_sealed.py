"""Hook secrets sealed at rest (``apps.notifications.sealed``): the database holds neither a
chat hook's Apprise URL (its service tokens) nor a webhook's signing key, only what the
current ``SECRET_KEY`` or one of ``SECRET_KEY_FALLBACKS`` opens; a rotation keeps hooks
working until ``reseal_hooks`` seals them under the new key, and a value changed in the
database is refused rather than used."""

from __future__ import annotations

from importlib import import_module
from io import StringIO

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from apps.notifications import hooks, sealed
from apps.notifications.hook_models import GroupHook, HookKind
from tests.notifications.story import cast

pytestmark = pytest.mark.django_db

CHAT_URL = "slack://T0KENA/T0KENB/T0KENCsecretpart/#ops"
WEBHOOK_URL = "https://hooks.example.org/receive?token=abc123"


def _stored(hook: GroupHook) -> tuple[str, str]:
    """The row's url and secret columns as the database holds them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT url, secret FROM notifications_grouphook WHERE id = %s", [hook.pk])
        return cursor.fetchone()


def _webhook() -> tuple[GroupHook, str]:
    story = cast()
    made = hooks.create(
        group_id=story.group,
        name="ops",
        kind=HookKind.WEBHOOK,
        url=WEBHOOK_URL,
        kinds=["approval_needed"],
        by=get_user_model().objects.get(username="alice"),
    )
    return made.hook, made.secret


def test_the_database_holds_neither_the_url_nor_the_signing_key() -> None:
    hook, secret = _webhook()

    url, key = _stored(hook)
    assert url.startswith(sealed.PREFIX)
    assert key.startswith(sealed.PREFIX)
    assert "abc123" not in url
    assert "hooks.example.org" not in url
    assert secret not in key
    again = GroupHook.objects.get(pk=hook.pk)
    assert (again.url, again.secret) == (WEBHOOK_URL, secret)


def test_a_chat_url_is_sealed_and_each_sealing_differs() -> None:
    story = cast()
    hook = GroupHook.objects.create(
        group_id=story.group, name="chat", kind=HookKind.CHAT, url=CHAT_URL, url_summary="slack"
    )

    url, key = _stored(hook)
    assert "T0KENCsecretpart" not in url
    assert key == ""  # a chat hook has no signing key: nothing to seal
    assert sealed.seal(CHAT_URL) != sealed.seal(CHAT_URL)  # a fresh IV each time
    assert GroupHook.objects.get(pk=hook.pk).url == CHAT_URL


def test_after_a_key_rotation_hooks_work_and_reseal_hooks_moves_them_to_the_new_key() -> None:
    hook, secret = _webhook()
    old_key = _stored(hook)[1]

    rotated = {"SECRET_KEY": "a-new-key-" + "x" * 50, "SECRET_KEY_FALLBACKS": [settings.SECRET_KEY]}
    with override_settings(**rotated):
        assert GroupHook.objects.get(pk=hook.pk).secret == secret  # opened by the fallback
        call_command("reseal_hooks", stdout=StringIO())
        resealed = _stored(hook)[1]
        assert resealed != old_key
        with override_settings(SECRET_KEY_FALLBACKS=[]):
            assert GroupHook.objects.get(pk=hook.pk).secret == secret  # the new key alone


def test_a_value_changed_in_the_database_or_sealed_under_an_unknown_key_is_refused() -> None:
    hook, _secret = _webhook()
    url, key = _stored(hook)
    tampered = key[:-6] + ("A" if key[-6] != "A" else "B") + key[-5:]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE notifications_grouphook SET secret = %s WHERE id = %s", [tampered, hook.pk]
        )

    with pytest.raises(sealed.SealingError):
        GroupHook.objects.get(pk=hook.pk)
    unknown = override_settings(SECRET_KEY="another-key-" + "y" * 50, SECRET_KEY_FALLBACKS=[])
    with unknown, pytest.raises(sealed.SealingError):
        sealed.unseal(url)


def test_the_migration_seals_hooks_written_before_sealing() -> None:
    hook, secret = _webhook()
    with connection.cursor() as cursor:  # as a hook was stored before migration 0005
        cursor.execute(
            "UPDATE notifications_grouphook SET url = %s, secret = %s WHERE id = %s",
            [WEBHOOK_URL, secret, hook.pk],
        )
    assert GroupHook.objects.get(pk=hook.pk).secret == secret  # read as it is meanwhile

    migration = import_module("apps.notifications.migrations.0005_seal_hook_secrets")
    migration.seal_existing(django_apps, None)

    url, key = _stored(hook)
    assert sealed.is_sealed(url)
    assert sealed.is_sealed(key)
    assert (GroupHook.objects.get(pk=hook.pk).url, sealed.unseal(key)) == (WEBHOOK_URL, secret)
