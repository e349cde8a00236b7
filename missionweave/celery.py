"""The Celery application. Time-driven sweeps (offer and lease expiry, deadlines, snapshots)
arrive with the leases issue; every task is one more caller of the ledger's write path.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "missionweave.settings")

app = Celery("missionweave")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
