"""Admins see the store in Django admin, corruption reports included (R13.1-05)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.artifacts.models import Blob, CorruptionReport
from apps.artifacts.services import artifact_store, corruption_record
from apps.artifacts.storage import Storage
from missionweave.protocol.canonical import sha256_digest


def test_blobs_uploads_and_corruption_reports_are_listed_read_only(
    db: None, local_storage: Storage
) -> None:
    """R13.1-05: a detected corruption is in admin for people to act on; a second detection
    refreshes the open report instead of adding one."""
    digest = sha256_digest(b"shown in admin")
    artifact_store(
        principal="agent:w1", digest=digest, chunks=[b"shown in admin"], storage=local_storage
    )
    for _ in range(2):
        corruption_record(
            digest=digest, actual=sha256_digest(b"x"), storage=local_storage, request="GET by test"
        )
    assert CorruptionReport.objects.get(digest=digest).count == 2
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)

    for name in ("blob", "groupartifact", "corruptionreport"):  # uploads: inline, per blob
        assert client.get(reverse(f"admin:artifacts_{name}_changelist")).status_code == 200
    page = client.get(reverse("admin:artifacts_blob_change", args=[digest]))
    assert page.status_code == 200
    assert b"agent:w1" in page.content
    reports = client.get(reverse("admin:artifacts_corruptionreport_changelist"))
    assert digest.encode() in reports.content
    assert Blob.objects.get(pk=digest).corrupted_at is not None
