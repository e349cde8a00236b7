"""Fixtures of the artifact store's tests: real uvicorn servers (filesystem and S3 storage)
and a real ``moto_server`` speaking S3 over HTTP, each started once per test session.

The servers share the worker's test database, so tests that talk to them use committed data
(``transactional_db``; ``live_world``). Each server keeps its objects in a folder or bucket of
its own, exposed through its ``storage`` for the tests to inspect and to damage.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apps.artifacts.storage import FilesystemStorage, S3Storage, Storage, configured_storage
from tests.factories import World, build_world
from tests.live_server import session_server

from .servers import S3_CREDENTIALS, ArtifactServer, MotoServer, run_moto_server, server_env


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """A real S3-compatible server over HTTP, for this worker's session."""
    with run_moto_server() as server:
        yield server


@pytest.fixture(scope="session")
def s3_credentials() -> Iterator[None]:
    """boto3 in this process (the in-process S3 storage) uses moto's test credentials."""
    saved = {name: os.environ.get(name) for name in S3_CREDENTIALS}
    os.environ.update(S3_CREDENTIALS)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def fs_server(django_db_setup: None, worker_id: str) -> Iterator[ArtifactServer]:
    """uvicorn with the filesystem storage (the default) in a folder of its own."""
    folder = Path(tempfile.mkdtemp(prefix="mwp-artifacts-fs-"))
    with session_server(worker_id, server="uvicorn", extra_env=server_env(folder)) as live:
        yield ArtifactServer(live, FilesystemStorage(folder))


@pytest.fixture(scope="session")
def daphne_server(django_db_setup: None, worker_id: str) -> Iterator[ArtifactServer]:
    """daphne (the demo's server, which reads a whole body before the application runs)
    with the filesystem storage in a folder of its own."""
    folder = Path(tempfile.mkdtemp(prefix="mwp-artifacts-daphne-"))
    with session_server(worker_id, server="daphne", extra_env=server_env(folder)) as live:
        yield ArtifactServer(live, FilesystemStorage(folder))


@pytest.fixture(scope="session")
def s3_server(
    django_db_setup: None, worker_id: str, moto_server: MotoServer, s3_credentials: None
) -> Iterator[ArtifactServer]:
    """uvicorn with the S3 storage, in a bucket of its own on the moto server."""
    folder = Path(tempfile.mkdtemp(prefix="mwp-artifacts-s3-"))
    bucket = moto_server.new_bucket()
    env = {
        **server_env(folder),
        **S3_CREDENTIALS,
        "MWP_ARTIFACT_STORAGE": "s3",
        "MWP_ARTIFACT_S3_BUCKET": bucket,
        "MWP_ARTIFACT_S3_ENDPOINT_URL": moto_server.endpoint_url,
        "MWP_ARTIFACT_S3_REGION": "us-east-1",
    }
    with session_server(worker_id, server="uvicorn", extra_env=env) as live:
        storage = S3Storage(
            bucket=bucket,
            spool_dir=folder / "tmp",
            endpoint_url=moto_server.endpoint_url,
            region="us-east-1",
        )
        yield ArtifactServer(live, storage)


@pytest.fixture
def live_world(transactional_db: None) -> World:
    """Committed, so the server process sees it (the live_server pattern)."""
    return build_world()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.fixture
def local_storage(settings: Any, tmp_path: Path) -> Storage:
    """The configured (filesystem) storage of this process, in the test's own folder."""
    settings.MWP_ARTIFACT_STORAGE = "filesystem"
    settings.MWP_ARTIFACT_DIR = tmp_path / "artifacts"
    return configured_storage()
