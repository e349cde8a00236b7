"""The embedded default's folders are made when Django starts, never when settings are imported.

Each case runs in a subprocess: settings are read from the environment once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: what the suite's environment sets (tests/conftest.py: the run's artifact folder) and the
#: embedded default leaves unset
EMBEDDED = (
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "MWP_AUTHORITY_KEY",
    "MWP_ARTIFACT_DIR",
)


def _python(code: str, var_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name not in EMBEDDED}
    env.update(DJANGO_SETTINGS_MODULE="missionweave.settings", MWP_VAR_DIR=str(var_dir))
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_importing_the_settings_makes_no_directory(tmp_path: Path) -> None:
    """``import missionweave.settings`` reads the environment and touches nothing on disk."""
    var_dir = tmp_path / "var"

    _python("import missionweave.settings", var_dir)

    assert not var_dir.exists()
    assert list(tmp_path.iterdir()) == []


def test_starting_django_makes_the_folders_the_embedded_default_writes_to(tmp_path: Path) -> None:
    """``django.setup()`` creates var/, the static root and the filesystem broker's folders, so
    SQLite, the authority key, Celery and beat find their folders on first use."""
    var_dir = tmp_path / "var"

    shown = _python(
        "import django, json; django.setup();"
        "from django.conf import settings;"
        "from missionweave.local_dirs import local_dirs;"
        "print(json.dumps([str(path) for path in local_dirs(settings)]))",
        var_dir,
    )

    folders = [Path(name) for name in json.loads(shown.stdout)]
    assert var_dir in folders
    assert var_dir / "celery" / "queue" in folders
    assert all(folder.is_dir() for folder in folders)
    assert all(folder.is_relative_to(var_dir) for folder in folders)
