"""The folders the embedded default writes to, made when the project starts.

Importing the settings must not touch the disk (a read-only deployment, a tool that only reads
the configuration, a test that imports them with another ``MWP_VAR_DIR``), so the settings only
name paths, and :func:`make_local_dirs` creates the ones this configuration will write to when
Django starts (``MissionWeaveConfig.ready``): before the first SQLite connection, the first
authority key, the first task on the filesystem broker or the first beat schedule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the transport options of kombu's filesystem broker that name folders
_BROKER_FOLDERS = ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")


def local_dirs(settings: Any) -> list[Path]:
    """Every folder the configuration ``settings`` writes into, in a stable order."""
    folders = [Path(settings.VAR_DIR), Path(settings.STATIC_ROOT)]
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        folders.append(Path(database["NAME"]).parent)
    if not settings.MWP_AUTHORITY_KEY:
        folders.append(Path(settings.MWP_AUTHORITY_KEY_FILE).parent)
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    folders += [Path(options[name]) for name in _BROKER_FOLDERS if name in options]
    folders.append(Path(settings.CELERY_BEAT_SCHEDULE_FILENAME).parent)
    # Uploads are spooled under the artifact folder whichever storage keeps the objects
    # (apps/artifacts/storage/), so it is made for S3 too.
    folders.append(Path(settings.MWP_ARTIFACT_DIR))
    return list(dict.fromkeys(folders))


def make_local_dirs(settings: Any) -> None:
    """Create the folders of :func:`local_dirs` that do not exist yet."""
    for folder in local_dirs(settings):
        folder.mkdir(parents=True, exist_ok=True)
