"""Celery task of the artifact store: the periodic garbage collection.

Beat enqueues it every ``MWP_ARTIFACT_GC_INTERVAL_S`` seconds (the static
``CELERY_BEAT_SCHEDULE``); it is a dry run that only reports unless
``MWP_ARTIFACT_GC_APPLY`` is set. The logic is ``apps.artifacts.collection.collect``; a
missed or doubled run changes nothing the next one would not.
"""

from __future__ import annotations

from django.conf import settings

from apps.artifacts.collection import collect
from missionweave.celery import app


@app.task(name="apps.artifacts.tasks.collect_artifacts")
def collect_artifacts(
    apply: bool | None = None, older_than_s: float | None = None
) -> dict[str, object]:
    """Collect unreferenced blobs older than ``MWP_ARTIFACT_GC_AGE_S``; the counts."""
    return collect(
        older_than_s=settings.MWP_ARTIFACT_GC_AGE_S if older_than_s is None else older_than_s,
        apply=settings.MWP_ARTIFACT_GC_APPLY if apply is None else apply,
    ).as_dict()
