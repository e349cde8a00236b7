"""The configured artifact storage (``MWP_ARTIFACT_STORAGE``): filesystem or S3.

Settings are read when a storage is first asked for, not at import; one instance per
configuration is kept (a test that overrides the settings gets its own).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .base import (
    CHUNK_BYTES,
    Spool,
    Storage,
    StorageError,
    StoredObject,
    clean_spools,
    is_no_room,
)
from .filesystem import FilesystemStorage
from .s3 import S3Storage

__all__ = [
    "CHUNK_BYTES",
    "FilesystemStorage",
    "S3Storage",
    "Spool",
    "Storage",
    "StorageError",
    "StoredObject",
    "clean_spools",
    "configured_storage",
    "is_no_room",
]

_instances: dict[tuple[str, ...], Storage] = {}


def configured_storage() -> Storage:
    """The storage the settings name (``MWP_ARTIFACT_STORAGE``: ``filesystem`` or ``s3``)."""
    kind = settings.MWP_ARTIFACT_STORAGE
    root = str(settings.MWP_ARTIFACT_DIR)
    key = (
        kind,
        root,
        settings.MWP_ARTIFACT_S3_BUCKET,
        settings.MWP_ARTIFACT_S3_ENDPOINT_URL,
        settings.MWP_ARTIFACT_S3_REGION,
    )
    storage = _instances.get(key)
    if storage is None:
        if kind == "filesystem":
            storage = FilesystemStorage(Path(root))
        elif kind == "s3":
            storage = S3Storage(
                bucket=settings.MWP_ARTIFACT_S3_BUCKET,
                spool_dir=Path(root) / "tmp",
                endpoint_url=settings.MWP_ARTIFACT_S3_ENDPOINT_URL,
                region=settings.MWP_ARTIFACT_S3_REGION,
            )
        else:
            raise ImproperlyConfigured(
                f"MWP_ARTIFACT_STORAGE must be 'filesystem' or 's3', not {kind!r}"
            )
        _instances[key] = storage
    return storage
