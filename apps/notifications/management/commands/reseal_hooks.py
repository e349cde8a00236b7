"""``manage.py reseal_hooks``: seal every hook's URL and signing key again under the current
``SECRET_KEY``, after a rotation that moved the old key to ``SECRET_KEY_FALLBACKS``; once it
has run, the old key can leave the fallbacks (docs/deploy.md, "Chat and webhooks")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from apps.notifications.hook_models import GroupHook
from missionweave.wording import counted


class Command(BaseCommand):
    help = "Seal every group hook's URL and signing key again under the current SECRET_KEY."

    def handle(self, *args: Any, **options: Any) -> None:
        count = 0
        with transaction.atomic():
            for hook in GroupHook.objects.select_for_update().only("id", "url", "secret"):
                # read opened by whichever key sealed it, written sealed by the current one
                hook.save(update_fields=["url", "secret"])
                count += 1
        self.stdout.write(f"sealed {counted(count, 'hook')} under the current key")
