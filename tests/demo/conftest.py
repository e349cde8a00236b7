"""The demo's artifacts go to each test's own folder, not the repository's ``var/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def artifact_dir(settings: Any, tmp_path: Path) -> Path:
    """The store the demo's in-process uploads and the authority's review read from."""
    settings.MWP_ARTIFACT_DIR = tmp_path / "artifacts"
    return settings.MWP_ARTIFACT_DIR
