"""The Celery application: workers run the time-driven sweeps that beat puts on the queue.

Every task is one more caller of the ledger's write path (``apps/work/tasks.py``); the
configuration is the "Celery" block of ``missionweave/settings.py`` (broker, queue, the static
beat schedule). Run it as::

    celery -A missionweave worker          # as many as the load needs
    celery -A missionweave beat            # one (a second is harmless: sweeps are idempotent)

``manage.py demo`` runs ``celery -A missionweave worker -B`` on the filesystem broker itself.

Django's database connections are looked after by Celery's Django fixup
(``celery.fixups.django``), installed because ``DJANGO_SETTINGS_MODULE`` is set before the
app is created: it runs ``django.setup()`` before tasks are imported, closes the
connections a forked pool child inherited, and closes them again before and after every
task (returning pooled connections, and closing a prefork child's pool), so a task never
runs on a connection a previous task or the parent left broken.
"""

from __future__ import annotations

import os

from celery import Celery

# Before Celery(): the Django fixup is only installed when this is set at creation.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "missionweave.settings")

app = Celery("missionweave")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
