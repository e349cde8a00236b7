"""The daily digest (issue 36 §3): one email per person gathering their ``daily_digest``
notifications not yet digested. The beat runs it at ``MWP_NOTIFY_DIGEST_HOUR`` (UTC); each
notification is gathered into one digest only (its ``digest`` is set in the transaction that
creates the digest's delivery), so a doubled run sends nothing twice.
"""

from __future__ import annotations

from django.db import transaction

from .kinds import EmailMode
from .models import Delivery, Notification
from .producing import EMAIL


def gather() -> list[int]:
    """A digest delivery for each person with undigested digest notifications; their ids."""
    people = (
        Notification.objects.filter(email_mode=EmailMode.DAILY_DIGEST, digest__isnull=True)
        .exclude(user__email="")
        .values_list("user_id", flat=True)
        .distinct()
    )
    made = []
    for user_id in sorted(set(people)):
        with transaction.atomic():
            rows = list(
                Notification.objects.select_for_update(skip_locked=True)
                .filter(user_id=user_id, email_mode=EmailMode.DAILY_DIGEST, digest__isnull=True)
                .order_by("pk")
            )
            if not rows:
                continue
            delivery, _ = Delivery.objects.get_or_create(
                channel=EMAIL,
                key=f"digest:{user_id}:{rows[0].pk}-{rows[-1].pk}",
                defaults={"user_id": user_id},
            )
            Notification.objects.filter(pk__in=[row.pk for row in rows]).update(digest=delivery)
            made.append(delivery.pk)
    return made
