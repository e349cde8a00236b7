"""Garbage collection of unreferenced blobs (R13.1-02): a dry run deletes nothing; applied,
it deletes only blobs no log references that nobody uploaded within the age; a referenced
blob is never deleted, however old."""

from __future__ import annotations

import io
import os
import time
from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from apps.artifacts.collection import collect
from apps.artifacts.models import Blob, Upload
from apps.artifacts.services import artifact_store
from apps.artifacts.storage import Storage
from apps.artifacts.tasks import collect_artifacts
from missionweave.protocol.canonical import sha256_digest
from tests.factories import World

from .helpers import reference

DAY = 24 * 3600.0


def _stored(storage: Storage, principal: str, data: bytes, *, age_s: float = 0) -> str:
    digest = sha256_digest(data)
    artifact_store(principal=principal, digest=digest, chunks=[data], storage=storage)
    then = timezone.now() - timedelta(seconds=age_s)
    Blob.objects.filter(pk=digest).update(stored_at=then)
    Upload.objects.filter(blob_id=digest).update(uploaded_at=then)
    return digest


def _scene(world: World, storage: Storage) -> dict[str, str]:
    w1 = world.w1.principal
    scene = {
        "old": _stored(storage, w1, b"old and unreferenced", age_s=8 * DAY),
        "old referenced": _stored(storage, w1, b"old but referenced", age_s=30 * DAY),
        "young": _stored(storage, w1, b"young", age_s=1 * DAY),
        "old, uploaded again": _stored(storage, w1, b"old, uploaded again", age_s=9 * DAY),
    }
    reference(world.group, scene["old referenced"])
    artifact_store(
        principal=world.w2.principal,
        digest=scene["old, uploaded again"],
        chunks=[b"old, uploaded again"],
        storage=storage,
    )
    return scene


def test_a_dry_run_reports_candidates_and_deletes_nothing(
    world: World, local_storage: Storage
) -> None:
    """R13.1-02: only the old unreferenced blob is a candidate; nothing is deleted."""
    scene = _scene(world, local_storage)

    report = collect(older_than_s=7 * DAY, storage=local_storage)

    assert [digest for digest, _size in report.candidates] == [scene["old"]]
    assert report.deleted == []
    assert all(local_storage.exists(digest) for digest in scene.values())
    assert Blob.objects.filter(pk__in=scene.values()).count() == len(scene)


def test_applied_it_deletes_only_unreferenced_old_blobs_object_and_rows(
    world: World, local_storage: Storage
) -> None:
    """R13.1-02: the old unreferenced blob goes, object then rows; a blob a log references
    stays however old, as do young ones and ones uploaded again within the age."""
    scene = _scene(world, local_storage)

    report = collect(older_than_s=7 * DAY, apply=True, storage=local_storage)

    assert report.deleted == [scene["old"]]
    assert not local_storage.exists(scene["old"])
    assert not Blob.objects.filter(pk=scene["old"]).exists()
    assert not Upload.objects.filter(blob_id=scene["old"]).exists()
    for name in ("old referenced", "young", "old, uploaded again"):
        assert local_storage.exists(scene[name]), name
        assert Blob.objects.filter(pk=scene[name]).exists(), name
    # Even with no age at all, a referenced blob is never a candidate.
    everything = collect(older_than_s=-60, apply=True, storage=local_storage)
    assert scene["old referenced"] not in everything.deleted
    assert local_storage.exists(scene["old referenced"])


def test_stale_spools_are_counted_by_a_dry_run_and_removed_when_applied(
    world: World, local_storage: Storage
) -> None:
    spool = local_storage.spool()
    spool.write([b"abandoned"])
    old = time.time() - 2 * 3600
    os.utime(spool.path, (old, old))

    assert collect(older_than_s=DAY, storage=local_storage).spools == 1
    assert spool.path.exists()
    assert collect(older_than_s=DAY, apply=True, storage=local_storage).spools == 1
    assert not spool.path.exists()
    spool.discard()


def test_the_command_is_a_dry_run_unless_told_to_apply(
    world: World, local_storage: Storage
) -> None:
    """``manage.py collect_artifacts [--apply] [--older-than SECONDS]``."""
    digest = _stored(local_storage, world.w1.principal, b"collect me", age_s=2 * DAY)
    out = io.StringIO()

    call_command("collect_artifacts", "--older-than", str(DAY), stdout=out)
    assert f"would delete {digest}" in out.getvalue()
    assert "dry run, nothing deleted" in out.getvalue()
    # counted in words: "1 unreferenced blob, 10 bytes", never "blob(s)"
    assert "1 unreferenced blob, 10 bytes, older than" in out.getvalue()
    assert "(s)" not in out.getvalue()
    assert local_storage.exists(digest)

    call_command("collect_artifacts", "--older-than", str(DAY), "--apply", stdout=out)
    assert f"deleted {digest}" in out.getvalue()
    assert not local_storage.exists(digest)


def test_the_beat_task_is_a_dry_run_by_default(
    world: World, local_storage: Storage, settings: object
) -> None:
    """The periodic task deletes only when MWP_ARTIFACT_GC_APPLY is set."""
    digest = _stored(local_storage, world.w1.principal, b"periodic", age_s=30 * DAY)

    counts = collect_artifacts()
    assert (counts["candidates"], counts["deleted"], counts["applied"]) == (1, 0, False)
    assert local_storage.exists(digest)

    settings.MWP_ARTIFACT_GC_APPLY = True  # type: ignore[attr-defined]
    assert collect_artifacts()["deleted"] == 1
    assert not local_storage.exists(digest)
