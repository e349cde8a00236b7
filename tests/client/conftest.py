"""The agent client is tested against a real server serving the real API (tests/live_server.py)
and, for artifacts, a real uvicorn — which hands request bodies to the application as they
arrive, as streamed uploads need — keeping its objects in a folder of its own, so a test can
damage a stored object behind the server's back."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.artifacts.storage import FilesystemStorage
from tests.artifacts.servers import ArtifactServer, server_env
from tests.live_server import LiveServer, live_asgi_server, session_server

__all__ = ["LiveServer", "artifact_server", "live_asgi_server"]


@pytest.fixture(scope="session")
def artifact_server(django_db_setup: None, worker_id: str) -> Iterator[ArtifactServer]:
    """uvicorn with the filesystem storage in a folder of its own (6 MiB upload limit)."""
    folder = Path(tempfile.mkdtemp(prefix="mwp-client-artifacts-"))
    with session_server(worker_id, server="uvicorn", extra_env=server_env(folder)) as live:
        yield ArtifactServer(live, FilesystemStorage(folder))
